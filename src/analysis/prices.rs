//! `--prices FILE`: what a run's tokens cost, exactly.
//!
//! Two formats, told apart by their first character:
//! - **LiteLLM's price map** (`model_prices_and_context_window.json`, the file most tools read): a
//!   JSON object of models, each with `input_cost_per_token`, `output_cost_per_token` and, where
//!   the vendor bills them otherwise, `cache_read_input_token_cost`,
//!   `cache_creation_input_token_cost` and `output_cost_per_reasoning_token`, in dollars a token.
//!   Entries without both an input and an output price (`sample_spec`, image and audio models) are
//!   left out.
//! - **A small TOML file**, in dollars per million tokens, one table a model:
//!   `"gpt-4o-mini" = { input = 0.15, cached_input = 0.075, output = 0.60 }` (also `cache_write`
//!   and `reasoning`).
//!
//! Prices are kept as whole attodollars (10⁻¹⁸ $) a token, read from each price's shortest decimal
//! form, and costs are sums of whole numbers: a cost is the exact product of the tokens and the
//! prices, printed with every digit it has, whatever the order runs are added in.
//!
//! A model is found by its name as the run records it, else without a `provider/` prefix
//! (`openai/gpt-4o-mini`), else as any entry's name after its own prefix.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// A price file may hold LiteLLM's whole map (about 1.5 MB today); more is refused unread.
pub const MAX_PRICES_BYTES: u64 = 64 << 20;

/// Attodollars in a dollar.
const ATTO: u128 = 1_000_000_000_000_000_000;

/// The tokens of one run (or many), by how they are billed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Tokens {
    /// Every input token, cached and cache-written ones included.
    pub input: u64,
    /// Of `input`, read from the server's prompt cache.
    pub cached_input: u64,
    /// Of `input`, written to the server's prompt cache (Anthropic bills these apart).
    pub cache_write: u64,
    /// Every output token, reasoning ones included.
    pub output: u64,
    /// Of `output`, spent thinking.
    pub reasoning: u64,
}

impl Tokens {
    /// Both counts, kind by kind (saturating: a file's counts are any `u64`).
    pub fn plus(self, other: Tokens) -> Tokens {
        Tokens {
            input: self.input.saturating_add(other.input),
            cached_input: self.cached_input.saturating_add(other.cached_input),
            cache_write: self.cache_write.saturating_add(other.cache_write),
            output: self.output.saturating_add(other.output),
            reasoning: self.reasoning.saturating_add(other.reasoning),
        }
    }

    /// A run's tokens as its usage records them.
    pub fn of(usage: &crate::record::run::Usage) -> Tokens {
        Tokens {
            input: usage.prompt_tokens,
            cached_input: usage.cached_tokens,
            cache_write: usage.cache_write_tokens,
            output: usage.completion_tokens,
            reasoning: usage.reasoning_tokens,
        }
    }
}

/// One model's prices, in attodollars a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelPrice {
    pub input: u128,
    /// Falls back to `input` when the file gives none.
    pub cached_input: Option<u128>,
    pub cache_write: Option<u128>,
    pub output: u128,
    /// Falls back to `output`.
    pub reasoning: Option<u128>,
}

impl ModelPrice {
    /// The exact cost of `tokens`. Cached and cache-written tokens beyond the input (a server's
    /// miscount) are billed as they say, and no input token is billed twice.
    pub fn cost(&self, tokens: Tokens) -> Cost {
        let special_input = tokens.cached_input.saturating_add(tokens.cache_write);
        let plain_input = tokens.input.saturating_sub(special_input);
        let reasoning = tokens.reasoning.min(tokens.output);
        let plain_output = tokens.output - reasoning;
        let bill = |count: u64, rate: u128| u128::from(count).saturating_mul(rate);
        Cost(
            bill(plain_input, self.input)
                .saturating_add(bill(tokens.cached_input, self.cached_input.unwrap_or(self.input)))
                .saturating_add(bill(tokens.cache_write, self.cache_write.unwrap_or(self.input)))
                .saturating_add(bill(plain_output, self.output))
                .saturating_add(bill(reasoning, self.reasoning.unwrap_or(self.output))),
        )
    }
}

/// An amount of money in attodollars, printed in dollars with every digit it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Cost(pub u128);

impl Cost {
    pub fn plus(self, other: Cost) -> Cost {
        Cost(self.0.saturating_add(other.0))
    }

    /// The cost in dollars as a float, for JSON output and means.
    pub fn dollars(self) -> f64 {
        self.0 as f64 / ATTO as f64
    }
}

impl fmt::Display for Cost {
    /// `$0.000405`, `$12.5`, `$0`: exact, trailing zeros dropped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.0 / ATTO;
        let fraction = format!("{:018}", self.0 % ATTO);
        let fraction = fraction.trim_end_matches('0');
        if fraction.is_empty() {
            write!(f, "${whole}")
        } else {
            write!(f, "${whole}.{fraction}")
        }
    }
}

/// The prices of a `--prices` file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PriceList {
    models: BTreeMap<String, ModelPrice>,
}

/// Why a price file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PricesError {
    #[error("cannot read the price file {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the price file {} is over {} MiB", path.display(), MAX_PRICES_BYTES >> 20)]
    TooLarge { path: PathBuf },
    #[error("the price file {} is neither LiteLLM's JSON price map nor a TOML price table: {reason}", path.display())]
    Format { path: PathBuf, reason: String },
    #[error("the price file {}, model `{model}`, `{field}`: {reason}", path.display())]
    Price {
        path: PathBuf,
        model: String,
        field: String,
        reason: String,
    },
    #[error("the price file {} prices no model", path.display())]
    Empty { path: PathBuf },
}

impl PriceList {
    /// Reads `path`, LiteLLM's JSON map or the TOML table, by its first character.
    pub fn read(path: &Path) -> Result<PriceList, PricesError> {
        let read_error = |source| PricesError::Read {
            path: path.to_owned(),
            source,
        };
        // Read at most one byte past the limit: a file that grows while read is refused too.
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|file| file.take(MAX_PRICES_BYTES + 1).read_to_string(&mut text))
            .map_err(read_error)?;
        if text.len() as u64 > MAX_PRICES_BYTES {
            return Err(PricesError::TooLarge {
                path: path.to_owned(),
            });
        }
        let list = if text.trim_start().starts_with('{') {
            PriceList::from_litellm(&text)
        } else {
            PriceList::from_toml(&text)
        }
        .map_err(|error| error.at(path))?;
        if list.models.is_empty() {
            return Err(PricesError::Empty {
                path: path.to_owned(),
            });
        }
        Ok(list)
    }

    /// LiteLLM's price map, in dollars a token.
    pub fn from_litellm(text: &str) -> Result<PriceList, UnplacedError> {
        let map: serde_json::Map<String, Value> =
            serde_json::from_str(text).map_err(|error| UnplacedError::Format(error.to_string()))?;
        let mut models = BTreeMap::new();
        for (model, entry) in &map {
            let Some(entry) = entry.as_object() else { continue };
            let price = |field: &str| -> Result<Option<u128>, UnplacedError> {
                match entry.get(field) {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::Number(number)) => attodollars(&number.to_string(), 0)
                        .map(Some)
                        .map_err(|reason| UnplacedError::price(model, field, reason)),
                    Some(other) => Err(UnplacedError::price(
                        model,
                        field,
                        format!("expected a number, found {}", crate::base::json::type_name(other)),
                    )),
                }
            };
            let (Some(input), Some(output)) =
                (price("input_cost_per_token")?, price("output_cost_per_token")?)
            else {
                continue;
            };
            models.insert(
                model.clone(),
                ModelPrice {
                    input,
                    cached_input: price("cache_read_input_token_cost")?,
                    cache_write: price("cache_creation_input_token_cost")?,
                    output,
                    reasoning: price("output_cost_per_reasoning_token")?,
                },
            );
        }
        Ok(PriceList { models })
    }

    /// The TOML table, in dollars per million tokens.
    pub fn from_toml(text: &str) -> Result<PriceList, UnplacedError> {
        let table: toml::Table =
            toml::from_str(text).map_err(|error| UnplacedError::Format(error.to_string()))?;
        let mut models = BTreeMap::new();
        for (model, entry) in &table {
            let Some(entry) = entry.as_table() else {
                return Err(UnplacedError::price(
                    model,
                    "",
                    "expected a table of prices".to_owned(),
                ));
            };
            if let Some(unknown) = entry.keys().find(|key| {
                !["input", "cached_input", "cache_write", "output", "reasoning"].contains(&key.as_str())
            }) {
                return Err(UnplacedError::price(
                    model,
                    unknown,
                    "unknown price (expected input, cached_input, cache_write, output, reasoning)".to_owned(),
                ));
            }
            let price = |field: &str| -> Result<Option<u128>, UnplacedError> {
                let decimal = match entry.get(field) {
                    None => return Ok(None),
                    Some(toml::Value::Integer(number)) => number.to_string(),
                    Some(toml::Value::Float(number)) => number.to_string(),
                    Some(other) => {
                        return Err(UnplacedError::price(
                            model,
                            field,
                            format!("expected a number, found {}", other.type_str()),
                        ));
                    }
                };
                // Per million tokens: six places to the left.
                attodollars(&decimal, 6)
                    .map(Some)
                    .map_err(|reason| UnplacedError::price(model, field, reason))
            };
            let required = |field: &str| {
                price(field)?.ok_or_else(|| UnplacedError::price(model, field, "missing".to_owned()))
            };
            models.insert(
                model.clone(),
                ModelPrice {
                    input: required("input")?,
                    cached_input: price("cached_input")?,
                    cache_write: price("cache_write")?,
                    output: required("output")?,
                    reasoning: price("reasoning")?,
                },
            );
        }
        Ok(PriceList { models })
    }

    /// The prices of `model`: by its name, else without its `provider/` prefix, else the one
    /// entry whose name after its own prefix is the model's.
    pub fn price(&self, model: &str) -> Option<&ModelPrice> {
        if let Some(price) = self.models.get(model) {
            return Some(price);
        }
        let bare = model.rsplit_once('/').map_or(model, |(_, bare)| bare);
        if let Some(price) = self.models.get(bare) {
            return Some(price);
        }
        self.models
            .iter()
            .find(|(name, _)| name.rsplit_once('/').is_some_and(|(_, name)| name == bare))
            .map(|(_, price)| price)
    }
}

/// A price file's error before the file's name is known.
#[derive(Debug)]
pub enum UnplacedError {
    Format(String),
    Price {
        model: String,
        field: String,
        reason: String,
    },
}

impl UnplacedError {
    fn price(model: &str, field: &str, reason: String) -> UnplacedError {
        UnplacedError::Price {
            model: crate::base::text::shorten(model, 80).into_owned(),
            field: crate::base::text::shorten(field, 80).into_owned(),
            reason,
        }
    }

    fn at(self, path: &Path) -> PricesError {
        match self {
            UnplacedError::Format(reason) => PricesError::Format {
                path: path.to_owned(),
                reason: crate::base::text::shorten(&reason, 200).into_owned(),
            },
            UnplacedError::Price { model, field, reason } => PricesError::Price {
                path: path.to_owned(),
                model,
                field,
                reason,
            },
        }
    }
}

/// A non-negative decimal (`0.15`, `2.5e-07`, `3`) times 10^`shift` dollars, in whole
/// attodollars: the digits are moved, never multiplied in floating point. A price finer than an
/// attodollar is refused rather than rounded.
fn attodollars(decimal: &str, shift: u32) -> Result<u128, String> {
    let refuse = |why: &str| Err(format!("`{decimal}` {why}"));
    let (mantissa, exponent) = match decimal.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => match exponent.parse::<i32>() {
            Ok(exponent) if exponent.abs() <= 40 => (mantissa, exponent),
            _ => return refuse("has an exponent out of range"),
        },
        None => (decimal, 0),
    };
    if mantissa.starts_with('-') {
        return refuse("is negative");
    }
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() && fraction.is_empty()
        || !(whole.bytes().chain(fraction.bytes())).all(|b| b.is_ascii_digit())
    {
        return refuse("is not a decimal number");
    }
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    // The value is digits × 10^(exponent − fraction digits − shift) dollars.
    let scale = 18 + exponent - fraction.len() as i32 - shift as i32;
    let digits = if scale < 0 {
        let cut = (-scale) as usize;
        let keep = digits.len().saturating_sub(cut);
        if digits[keep..].bytes().any(|b| b != b'0') {
            return refuse("is finer than 10^-18 dollars a token");
        }
        digits[..keep].to_owned()
    } else {
        format!("{digits}{}", "0".repeat(scale as usize))
    };
    if digits.is_empty() {
        return Ok(0);
    }
    digits.parse::<u128>().or_else(|_| refuse("is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_become_whole_attodollars_exactly() {
        assert_eq!(attodollars("2.5e-07", 0), Ok(250_000_000_000));
        assert_eq!(attodollars("0.00000015", 0), Ok(150_000_000_000));
        assert_eq!(attodollars("0.15", 6), Ok(150_000_000_000));
        assert_eq!(attodollars("3", 6), Ok(3_000_000_000_000));
        assert_eq!(attodollars("0", 0), Ok(0));
        assert_eq!(attodollars("1e-18", 0), Ok(1));
        assert!(attodollars("1e-19", 0).unwrap_err().contains("finer"));
        assert!(attodollars("-1", 0).unwrap_err().contains("negative"));
        assert!(attodollars("1e400", 0).is_err());
        assert!(attodollars("abc", 0).is_err());
        assert_eq!(attodollars("1e20", 0), Ok(10u128.pow(38)));
        assert!(attodollars("1e21", 0).unwrap_err().contains("too large"));
    }

    #[test]
    fn a_cost_is_the_exact_sum_of_tokens_times_prices() {
        let price = ModelPrice {
            input: 150_000_000_000,
            cached_input: Some(75_000_000_000),
            cache_write: None,
            output: 600_000_000_000,
            reasoning: None,
        };
        let tokens = Tokens {
            input: 10_000,
            cached_input: 8_192,
            cache_write: 0,
            output: 300,
            reasoning: 100,
        };
        // 1,808 × $0.15/M + 8,192 × $0.075/M + 300 × $0.60/M = $0.0002712 + $0.0006144 + $0.00018.
        assert_eq!(price.cost(tokens).to_string(), "$0.0010656");
        assert_eq!(Cost(0).to_string(), "$0");
        assert_eq!(Cost(12 * ATTO + ATTO / 2).to_string(), "$12.5");
    }

    #[test]
    fn litellm_and_toml_files_give_the_same_prices() {
        let litellm = r#"{
            "sample_spec": {"input_cost_per_token": 0, "max_tokens": "LEGACY"},
            "gpt-4o-mini": {"input_cost_per_token": 1.5e-07, "output_cost_per_token": 6e-07,
                            "cache_read_input_token_cost": 7.5e-08, "litellm_provider": "openai"},
            "anthropic/claude-sonnet-4-5": {"input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05,
                            "cache_creation_input_token_cost": 3.75e-06, "cache_read_input_token_cost": 3e-07},
            "dall-e-3": {"output_cost_per_image": 0.04}
        }"#;
        let toml = r#"
            "gpt-4o-mini" = { input = 0.15, cached_input = 0.075, output = 0.6 }
            [claude-sonnet-4-5]
            input = 3
            cached_input = 0.3
            cache_write = 3.75
            output = 15
        "#;
        let from_json = PriceList::from_litellm(litellm).unwrap();
        let from_toml = PriceList::from_toml(toml).unwrap();
        for model in [
            "gpt-4o-mini",
            "openai/gpt-4o-mini",
            "claude-sonnet-4-5",
            "anthropic/claude-sonnet-4-5",
        ] {
            assert_eq!(from_json.price(model), from_toml.price(model), "{model}");
            assert!(from_json.price(model).is_some(), "{model}");
        }
        assert_eq!(from_json.price("dall-e-3"), None);
        assert_eq!(from_json.price("sample_spec"), None);
        assert_eq!(from_json.price("gpt-5"), None);
    }

    #[test]
    fn a_bad_price_names_the_model_and_the_field() {
        let error = PriceList::from_toml("[m]\ninput = 1\noutput = -2\n")
            .unwrap_err()
            .at(Path::new("p.toml"));
        assert_eq!(
            error.to_string(),
            "the price file p.toml, model `m`, `output`: `-2` is negative"
        );
        let error = PriceList::from_toml("[m]\ninput = 1\n")
            .unwrap_err()
            .at(Path::new("p.toml"));
        assert_eq!(
            error.to_string(),
            "the price file p.toml, model `m`, `output`: missing"
        );
        let error = PriceList::from_toml("[m]\ninput = 1\noutput = 2\nouput = 3\n")
            .unwrap_err()
            .at(Path::new("p.toml"));
        assert!(error.to_string().contains("`ouput`: unknown price"), "{error}");
        let error = PriceList::from_litellm(
            "{\"m\": {\"input_cost_per_token\": \"x\", \"output_cost_per_token\": 1}}",
        )
        .unwrap_err()
        .at(Path::new("p.json"));
        assert!(
            error
                .to_string()
                .contains("model `m`, `input_cost_per_token`: expected a number"),
            "{error}"
        );
    }
}
