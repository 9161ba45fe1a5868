//! `Calculator`: a pure arithmetic evaluator on nom, and the `Calculate[expression]` tool around it.
//!
//! Grammar, loosest binding first (`^` is right-associative and binds tighter than unary minus,
//! so `-2^2` is `-4` and `2^3^2` is `512`, as in Python):
//!
//! ```text
//! sum     = product (("+" | "-") product)*
//! product = unary (("*" | "/" | "%") unary)*
//! unary   = ("-" | "+") unary | power
//! power   = postfix ("^" unary)?
//! postfix = primary "!"*
//! primary = number | "(" sum ")" | function "(" sum ("," sum)* ")" | "pi" | "e"
//! ```
//!
//! Before parsing, common model spellings are normalised: `**` → `^`, `×`/`·` → `*`, `÷` → `/`,
//! `−` → `-`, `π` → `pi`, thousands separators (`1,000,000`) dropped, and one pair of quotes or
//! backticks around the whole expression removed. Error positions count characters (from 1) in the
//! expression as the model wrote it.

use futures::future::BoxFuture;
use nom::bytes::complete::take_while;
use nom::character::complete::{char, digit0, digit1, multispace0, one_of, satisfy};
use nom::combinator::{opt, recognize};
use nom::sequence::pair;
use nom::{IResult, Parser};

use crate::tools::{Tool, ToolError};

/// The longest expression the calculator reads, in characters.
pub const MAX_EXPRESSION_CHARS: usize = 1000;
/// The deepest nesting of parentheses, function calls and unary signs.
pub const MAX_NESTING_DEPTH: usize = 64;
/// The largest factorial argument: `171!` is beyond `f64`.
const MAX_FACTORIAL: f64 = 170.0;

pub(crate) const EXAMPLES: &str = include_str!("../../fewshot/calculate.txt");

/// Why an expression has no value. Positions count characters from 1 in the expression as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CalculatorError {
    #[error("the expression is empty")]
    Empty,
    #[error("the expression is {n_chars} characters long; the limit is {MAX_EXPRESSION_CHARS}")]
    TooLong { n_chars: usize },
    #[error("the expression nests deeper than {MAX_NESTING_DEPTH} levels at position {position}")]
    TooDeep { position: usize },
    #[error("expected {expected} at position {position}, found {found}")]
    Expected {
        expected: &'static str,
        found: String,
        position: usize,
    },
    #[error(
        "unknown name `{name}` at position {position}: only numbers, operators, functions, `pi` and `e` are understood"
    )]
    UnknownName { name: String, position: usize },
    #[error("`{function}` at position {position} takes {expected}, found {found}")]
    Arity {
        function: &'static str,
        expected: &'static str,
        found: usize,
        position: usize,
    },
    #[error("{problem} at position {position}")]
    Undefined { problem: &'static str, position: usize },
    #[error("the result at position {position} is too large")]
    TooLarge { position: usize },
}

/// Evaluates an arithmetic expression.
pub fn evaluate(expression: &str) -> Result<f64, CalculatorError> {
    let n_chars = expression.chars().count();
    if n_chars > MAX_EXPRESSION_CHARS {
        return Err(CalculatorError::TooLong { n_chars });
    }
    let source = Normalized::new(expression);
    if source.text.trim().is_empty() {
        return Err(CalculatorError::Empty);
    }
    let parser = Evaluator { source: &source };
    let (rest, value) = parser.sum(&source.text, 0)?;
    let (rest, _) = whitespace(rest);
    if !rest.is_empty() {
        return Err(parser.expected("an operator or the end of the expression", rest));
    }
    Ok(value)
}

/// What the model reads: the value as a person writes it, or why the expression has none. A value
/// that is not a finite number is never shown as a result: `evaluate` refuses every overflow as
/// `TooLarge`, and should one slip through, the model reads the same kind of request to reformulate.
pub fn observation(expression: &str) -> String {
    let failure = match evaluate(expression) {
        Ok(value) if value.is_finite() => return format_number(value),
        Ok(_) => "the result is not a finite number".to_owned(),
        Err(error) => error.to_string(),
    };
    format!("Please reformulate the expression. The calculator tool has failed with error: '{failure}'")
}

/// A number as Python's `repr` prints a float, except that whole numbers drop the `.0`:
/// `405`, `404.6`, `23.88888888888889`, `1e-05`, `1.2676506002282294e+30`; and as Python does,
/// `nan`, `inf` and `-inf` for the values that are not finite.
pub fn format_number(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let value = if value == 0.0 { 0.0 } else { value }; // no `-0`
    let magnitude = value.abs();
    if value == 0.0 || (1e-4..1e16).contains(&magnitude) {
        if value.fract() == 0.0 {
            return format!("{value:.0}");
        }
        return value.to_string();
    }
    // `{:e}` gives the shortest round-trip digits of a finite number: `1.2676506002282294e30`.
    let scientific = format!("{value:e}");
    match scientific.split_once('e') {
        Some((mantissa, exponent)) => match exponent.strip_prefix('-') {
            Some(digits) => format!("{mantissa}e-{digits:0>2}"),
            None => format!("{mantissa}e+{exponent:0>2}"),
        },
        None => scientific,
    }
}

/// `Calculate[expression]`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Calculate;

impl Tool for Calculate {
    fn name(&self) -> &str {
        "Calculate"
    }

    fn description(&self) -> &str {
        "Calculate[expression], which evaluates an arithmetic expression and returns the result."
    }

    fn examples(&self) -> Option<&str> {
        Some(EXAMPLES)
    }

    fn call<'a>(&'a self, argument: &'a str) -> BoxFuture<'a, Result<String, ToolError>> {
        let observation = observation(argument);
        Box::pin(async move { Ok(observation) })
    }
}

/// The expression after spelling normalisation, with the original position of every byte.
struct Normalized {
    text: String,
    /// For each byte of `text` (and one past the end), the 0-based character index it came from.
    origins: Vec<usize>,
}

impl Normalized {
    fn new(expression: &str) -> Normalized {
        let mut chars: Vec<char> = expression.chars().collect();
        let mut first = 0;
        if let [open, .., close] = chars.as_slice()
            && open == close
            && matches!(open, '"' | '\'' | '`')
        {
            first = 1;
            chars.pop();
        }
        let thousands = thousands_separators(&chars);
        let mut normalized = Normalized {
            text: String::with_capacity(chars.len()),
            origins: Vec::with_capacity(chars.len() + 1),
        };
        let mut idx = first;
        while idx < chars.len() {
            let c = chars[idx];
            match c {
                ',' if thousands[idx] => {}
                '*' if chars.get(idx + 1) == Some(&'*') => {
                    normalized.push('^', idx);
                    idx += 1;
                }
                '×' | '·' | '⋅' => normalized.push('*', idx),
                '÷' => normalized.push('/', idx),
                '−' | '–' => normalized.push('-', idx),
                'π' => {
                    normalized.push('p', idx);
                    normalized.push('i', idx);
                }
                _ => normalized.push(c, idx),
            }
            idx += 1;
        }
        normalized.origins.push(chars.len());
        normalized
    }

    fn push(&mut self, c: char, origin: usize) {
        self.text.push(c);
        self.origins.extend(std::iter::repeat_n(origin, c.len_utf8()));
    }
}

/// Which commas are thousands separators: between a group of 1–3 digits (or a previous group of
/// exactly 3) and exactly three digits not followed by another digit.
fn thousands_separators(chars: &[char]) -> Vec<bool> {
    let mut separators = vec![false; chars.len()];
    for idx in 0..chars.len() {
        if chars[idx] != ',' {
            continue;
        }
        let after = chars.get(idx + 1..idx + 4);
        let three_after = after.is_some_and(|digits| digits.iter().all(char::is_ascii_digit))
            && !chars.get(idx + 4).is_some_and(char::is_ascii_digit);
        if !three_after {
            continue;
        }
        let n_before = chars[..idx]
            .iter()
            .rev()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let group_start = idx - n_before;
        let before_group = group_start.checked_sub(1).map(|prev| chars[prev]);
        separators[idx] = match before_group {
            Some(',') => n_before == 3 && separators[group_start - 1],
            Some('.') => false,
            Some(c) if c.is_alphanumeric() || c == '_' => false,
            _ => (1..=3).contains(&n_before),
        };
    }
    separators
}

/// Parses and evaluates in one pass over the normalised text.
struct Evaluator<'s> {
    source: &'s Normalized,
}

type Parsed<'i> = Result<(&'i str, f64), CalculatorError>;

impl Evaluator<'_> {
    fn sum<'i>(&self, input: &'i str, depth: usize) -> Parsed<'i> {
        let (mut rest, mut value) = self.product(input, depth)?;
        loop {
            let Some((after, operator)) = operator(rest, "+-") else {
                return Ok((rest, value));
            };
            let (after, right) = self.product(after, depth)?;
            value = match operator {
                '+' => value + right,
                _ => value - right,
            };
            self.check_size(value, rest)?;
            rest = after;
        }
    }

    fn product<'i>(&self, input: &'i str, depth: usize) -> Parsed<'i> {
        let (mut rest, mut value) = self.unary(input, depth)?;
        loop {
            let Some((after, operator)) = operator(rest, "*/%") else {
                return Ok((rest, value));
            };
            let (after, right) = self.unary(after, depth)?;
            value = match operator {
                '*' => value * right,
                '/' if right == 0.0 => return Err(self.undefined("division by zero", rest)),
                '/' => value / right,
                _ if right == 0.0 => return Err(self.undefined("modulo by zero", rest)),
                // Python's `%`: the result takes the sign of the divisor.
                _ => value - right * (value / right).floor(),
            };
            self.check_size(value, rest)?;
            rest = after;
        }
    }

    fn unary<'i>(&self, input: &'i str, depth: usize) -> Parsed<'i> {
        match operator(input, "+-") {
            Some((rest, sign)) => {
                let depth = self.deeper(depth, input)?;
                let (rest, value) = self.unary(rest, depth)?;
                Ok((rest, if sign == '-' { -value } else { value }))
            }
            None => self.power(input, depth),
        }
    }

    fn power<'i>(&self, input: &'i str, depth: usize) -> Parsed<'i> {
        let (rest, base) = self.postfix(input, depth)?;
        let Some((after, _)) = operator(rest, "^") else {
            return Ok((rest, base));
        };
        let depth = self.deeper(depth, rest)?;
        let (after, exponent) = self.unary(after, depth)?;
        if base < 0.0 && exponent.fract() != 0.0 {
            return Err(self.undefined("a fractional power of a negative number", rest));
        }
        if base == 0.0 && exponent < 0.0 {
            return Err(self.undefined("a negative power of zero", rest));
        }
        let value = base.powf(exponent);
        self.check_size(value, rest)?;
        Ok((after, value))
    }

    fn postfix<'i>(&self, input: &'i str, depth: usize) -> Parsed<'i> {
        let (mut rest, mut value) = self.primary(input, depth)?;
        while let Some((after, _)) = operator(rest, "!") {
            if after.starts_with('=') {
                break; // `!=` is a comparison, which the calculator does not do
            }
            if value < 0.0 || value.fract() != 0.0 {
                return Err(self.undefined(
                    "factorial of a number that is not a whole number of at least 0",
                    rest,
                ));
            }
            if value > MAX_FACTORIAL {
                return Err(self.too_large(rest));
            }
            value = (2..=value as u32).map(f64::from).product();
            rest = after;
        }
        Ok((rest, value))
    }

    fn primary<'i>(&self, input: &'i str, depth: usize) -> Parsed<'i> {
        let (input, _) = whitespace(input);
        if let Ok((rest, digits)) = number(input) {
            let Ok(value) = digits.parse::<f64>() else {
                return Err(self.expected("a number", input));
            };
            self.check_size(value, input)?;
            return Ok((rest, value));
        }
        if let Some(rest) = input.strip_prefix('(') {
            let depth = self.deeper(depth, input)?;
            let (rest, value) = self.sum(rest, depth)?;
            let (rest, _) = whitespace(rest);
            return match rest.strip_prefix(')') {
                Some(rest) => Ok((rest, value)),
                None => Err(self.expected("an operator or `)`", rest)),
            };
        }
        let Ok((rest, name)) = identifier(input) else {
            return Err(self.expected("a number, `(` or a function", input));
        };
        let lowered = name.to_ascii_lowercase();
        match lowered.as_str() {
            "pi" => return Ok((rest, std::f64::consts::PI)),
            "e" => return Ok((rest, std::f64::consts::E)),
            _ => {}
        }
        let Some(function) = Function::named(&lowered) else {
            return Err(CalculatorError::UnknownName {
                name: name.to_owned(),
                position: self.position(input),
            });
        };
        let (after_space, _) = whitespace(rest);
        let Some(rest) = after_space.strip_prefix('(') else {
            return Err(self.expected("`(` after the function name", after_space));
        };
        let depth = self.deeper(depth, input)?;
        let (rest, arguments) = self.arguments(rest, depth)?;
        let value = function.apply(&arguments).map_err(|failure| match failure {
            Failure::Arity(expected) => CalculatorError::Arity {
                function: function.name,
                expected,
                found: arguments.len(),
                position: self.position(input),
            },
            Failure::Undefined(problem) => self.undefined(problem, input),
        })?;
        self.check_size(value, input)?;
        Ok((rest, value))
    }

    /// `sum ("," sum)* ")"`, after the opening parenthesis.
    fn arguments<'i>(&self, input: &'i str, depth: usize) -> Result<(&'i str, Vec<f64>), CalculatorError> {
        let mut arguments = Vec::new();
        let (mut rest, _) = whitespace(input);
        if let Some(after) = rest.strip_prefix(')') {
            return Ok((after, arguments));
        }
        loop {
            let (after, value) = self.sum(rest, depth)?;
            arguments.push(value);
            let (after, _) = whitespace(after);
            if let Some(after) = after.strip_prefix(',') {
                rest = after;
            } else if let Some(after) = after.strip_prefix(')') {
                return Ok((after, arguments));
            } else {
                return Err(self.expected("an operator, `,` or `)`", after));
            }
        }
    }

    fn deeper(&self, depth: usize, at: &str) -> Result<usize, CalculatorError> {
        if depth >= MAX_NESTING_DEPTH {
            return Err(CalculatorError::TooDeep {
                position: self.position(at),
            });
        }
        Ok(depth + 1)
    }

    fn check_size(&self, value: f64, at: &str) -> Result<(), CalculatorError> {
        if value.is_finite() {
            Ok(())
        } else {
            Err(self.too_large(at))
        }
    }

    /// The 1-based position, in the expression as written, of the first non-space character of `at`.
    fn position(&self, at: &str) -> usize {
        let (at, _) = whitespace(at);
        let offset = self.source.text.len() - at.len();
        self.source.origins[offset] + 1
    }

    fn expected(&self, expected: &'static str, at: &str) -> CalculatorError {
        let (at, _) = whitespace(at);
        let found = match at.chars().next() {
            None => "the end of the expression".to_owned(),
            Some(c) if c.is_alphanumeric() || c == '_' => {
                let word: String = at
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
                    .collect();
                format!("`{word}`")
            }
            Some(c) => format!("`{c}`"),
        };
        CalculatorError::Expected {
            expected,
            found,
            position: self.position(at),
        }
    }

    fn undefined(&self, problem: &'static str, at: &str) -> CalculatorError {
        CalculatorError::Undefined {
            problem,
            position: self.position(at),
        }
    }

    fn too_large(&self, at: &str) -> CalculatorError {
        CalculatorError::TooLarge {
            position: self.position(at),
        }
    }
}

/// Why a function has no value for its arguments.
enum Failure {
    Arity(&'static str),
    Undefined(&'static str),
}

#[derive(Debug, Clone, Copy)]
struct Function {
    name: &'static str,
}

const FUNCTIONS: [&str; 17] = [
    "sqrt", "abs", "ceil", "floor", "round", "exp", "ln", "log", "log10", "sin", "cos", "tan", "asin",
    "acos", "atan", "min", "max",
];

impl Function {
    fn named(lowered: &str) -> Option<Function> {
        FUNCTIONS
            .into_iter()
            .find(|name| *name == lowered)
            .map(|name| Function { name })
    }

    fn apply(self, arguments: &[f64]) -> Result<f64, Failure> {
        let one = || match arguments {
            [x] => Ok(*x),
            _ => Err(Failure::Arity("1 argument")),
        };
        let positive = |x: f64| {
            if x > 0.0 {
                Ok(x)
            } else {
                Err(Failure::Undefined("logarithm of a number that is not positive"))
            }
        };
        let unit_range = |x: f64| {
            if (-1.0..=1.0).contains(&x) {
                Ok(x)
            } else {
                Err(Failure::Undefined(
                    "inverse sine or cosine of a number outside -1..1",
                ))
            }
        };
        match self.name {
            "sqrt" => {
                let x = one()?;
                if x < 0.0 {
                    return Err(Failure::Undefined("square root of a negative number"));
                }
                Ok(x.sqrt())
            }
            "abs" => Ok(one()?.abs()),
            "ceil" => Ok(one()?.ceil()),
            "floor" => Ok(one()?.floor()),
            "round" => match arguments {
                [x] => Ok(x.round()),
                [x, digits] if digits.fract() == 0.0 && digits.abs() <= 15.0 => {
                    let scale = 10f64.powi(*digits as i32);
                    Ok((x * scale).round() / scale)
                }
                [_, _] => Err(Failure::Undefined(
                    "round's digits must be a whole number between -15 and 15",
                )),
                _ => Err(Failure::Arity("1 or 2 arguments")),
            },
            "exp" => Ok(one()?.exp()),
            "ln" => Ok(positive(one()?)?.ln()),
            "log" => match arguments {
                [x] => Ok(positive(*x)?.ln()),
                [x, base] if *base > 0.0 && *base != 1.0 => Ok(positive(*x)?.log(*base)),
                [_, _] => Err(Failure::Undefined("logarithm base that is not positive or is 1")),
                _ => Err(Failure::Arity("1 or 2 arguments")),
            },
            "log10" => Ok(positive(one()?)?.log10()),
            "sin" => Ok(one()?.sin()),
            "cos" => Ok(one()?.cos()),
            "tan" => Ok(one()?.tan()),
            "asin" => Ok(unit_range(one()?)?.asin()),
            "acos" => Ok(unit_range(one()?)?.acos()),
            "atan" => Ok(one()?.atan()),
            "min" | "max" => {
                let [first, rest @ ..] = arguments else {
                    return Err(Failure::Arity("at least 1 argument"));
                };
                let pick = if self.name == "min" { f64::min } else { f64::max };
                Ok(rest.iter().copied().fold(*first, pick))
            }
            // A name in `FUNCTIONS` without its arm above: said so, never computed as another.
            _ => Err(Failure::Undefined("function without an implementation")),
        }
    }
}

fn whitespace(input: &str) -> (&str, &str) {
    let parsed: IResult<&str, &str> = multispace0(input);
    parsed.unwrap_or((input, ""))
}

/// An operator from `operators`, after optional whitespace.
fn operator<'i>(input: &'i str, operators: &str) -> Option<(&'i str, char)> {
    let (input, _) = whitespace(input);
    let parsed: IResult<&str, char> = one_of(operators).parse(input);
    parsed.ok()
}

/// `12`, `12.5`, `.5`, `12.`, `1e6`, `2.5E-3`.
fn number(input: &str) -> IResult<&str, &str> {
    let mantissa = nom::branch::alt((
        pair(digit1, opt(pair(char('.'), digit0))).map(|_| ()),
        pair(char('.'), digit1).map(|_| ()),
    ));
    let exponent = opt((one_of("eE"), opt(one_of("+-")), digit1));
    let (rest, _) = pair(mantissa, exponent).parse(input)?;
    // The consumed text, taken by length: in nom 8.0.0, `recognize` around this parser returned
    // `3.` for `3.25` (see the `numbers_keep_every_digit` test).
    Ok((rest, &input[..input.len() - rest.len()]))
}

fn identifier(input: &str) -> IResult<&str, &str> {
    recognize(pair(
        satisfy(|c: char| c.is_alphabetic() || c == '_'),
        take_while(|c: char| c.is_alphanumeric() || c == '_'),
    ))
    .parse(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_function_has_its_own_implementation() {
        use std::f64::consts::{E, FRAC_PI_3, FRAC_PI_4, FRAC_PI_6, LN_2};
        // Each function's value where it differs from the others', known without the calculator.
        let cases = [
            ("sqrt", "sqrt(0.25)", 0.5),
            ("abs", "abs(-0.75)", 0.75),
            ("ceil", "ceil(0.25)", 1.0),
            ("floor", "floor(-0.25)", -1.0),
            ("round", "round(2.5)", 3.0),
            ("round", "round(1.2345, 2)", 1.23),
            ("exp", "exp(1)", E),
            ("ln", "ln(0.5)", -LN_2),
            ("log", "log(8, 2)", 3.0),
            ("log", "log(0.5)", -LN_2),
            ("log10", "log10(1000)", 3.0),
            ("sin", "sin(0.5235987755982988)", 0.5),
            ("cos", "cos(1.0471975511965976)", 0.5),
            ("tan", "tan(0.7853981633974483)", 1.0),
            ("asin", "asin(0.5)", FRAC_PI_6),
            ("acos", "acos(0.5)", FRAC_PI_3),
            ("atan", "atan(1)", FRAC_PI_4),
            ("min", "min(0.5, -2, 3)", -2.0),
            ("max", "max(0.5, -2, 3)", 3.0),
        ];
        for (_, expression, expected) in cases {
            let value = evaluate(expression).unwrap();
            assert!(
                (value - expected).abs() <= 1e-12,
                "{expression} = {value}, not {expected}"
            );
        }
        let mut named: Vec<&str> = cases.iter().map(|(name, _, _)| *name).collect();
        named.dedup();
        assert_eq!(named, FUNCTIONS);
    }

    #[test]
    fn numbers_keep_every_digit() {
        for (text, rest, digits) in [
            ("3.25", "", "3.25"),
            ("12.", "", "12."),
            (".5e-3+1", "+1", ".5e-3"),
            ("2e", "e", "2"),
            ("7E+2x", "x", "7E+2"),
        ] {
            assert_eq!(number(text).unwrap(), (rest, digits), "{text}");
        }
    }
}
