//! `Method`: which row of the ReAct paper's Table 1 answers a question — ReAct, Act, CoT,
//! Standard, CoT-SC, or one of the two backoffs between ReAct and CoT-SC.
//!
//! `Reflect` names Reflexion's strategies between trials; `StopRule` and `ScStop`, how CoT-SC
//! stops sampling early.
//!
//! Only the names live here, beside the profile, so that run files can record them; the solvers
//! that carry them out live in the `solver` module, above the agent.

use std::fmt;
use std::str::FromStr;

/// A way of answering a question, as the ReAct paper compares them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Method {
    /// Thought / Action / Observation steps (`webthink_simple6`).
    #[default]
    React,
    /// Action / Observation steps, no thoughts (`webact_simple6`).
    Act,
    /// One reasoning completion ending in `Answer:` (`cotqa_simple6`).
    Cot,
    /// One answer, no reasoning (`webqa_simple6`).
    Standard,
    /// Self-consistency: N CoT samples, the majority answer.
    CotSc,
    /// ReAct; CoT-SC answers when ReAct ends without an answer (budget or repeated action).
    ReactThenCotSc,
    /// CoT-SC; ReAct answers when the majority holds fewer than half the samples.
    CotScThenReact,
}

/// Every method, in the order the paper's Table 1 lists them.
pub const METHODS: [Method; 7] = [
    Method::Standard,
    Method::Cot,
    Method::CotSc,
    Method::Act,
    Method::React,
    Method::CotScThenReact,
    Method::ReactThenCotSc,
];

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::React => "react",
            Method::Act => "act",
            Method::Cot => "cot",
            Method::Standard => "standard",
            Method::CotSc => "cot-sc",
            Method::ReactThenCotSc => "react-then-cot-sc",
            Method::CotScThenReact => "cot-sc-then-react",
        }
    }

    /// Whether the method runs the Search / Lookup loop (ReAct or Act, alone or in a backoff).
    pub fn acts(self) -> bool {
        !matches!(self, Method::Cot | Method::Standard | Method::CotSc)
    }

    /// Whether the method samples CoT answers and votes on them.
    pub fn samples(self) -> bool {
        matches!(
            self,
            Method::CotSc | Method::ReactThenCotSc | Method::CotScThenReact
        )
    }

    /// Whether the method backs off from one phase to another.
    pub fn backs_off(self) -> bool {
        matches!(self, Method::ReactThenCotSc | Method::CotScThenReact)
    }

    /// The names this build knows, for messages.
    pub fn known() -> String {
        let names: Vec<String> = METHODS.iter().map(|method| format!("`{method}`")).collect();
        names.join(", ")
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Method {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        METHODS
            .into_iter()
            .find(|method| method.as_str() == s)
            .ok_or_else(|| format!("unknown method `{s}`: this build knows {}", Method::known()))
    }
}

impl serde::Serialize for Method {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A run file naming a method this build does not know is refused with the method's name.
impl<'de> serde::Deserialize<'de> for Method {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// What a question's next trial carries from the trial it failed (`eval --trials --reflect`):
/// Reflexion's four strategies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Reflect {
    /// Nothing: the question is asked again as it was (Reflexion's `base`).
    #[default]
    None,
    /// The failed trial's scratchpad, shown whole before the question (`last_trial`).
    LastTrial,
    /// A reflection the model writes on the failed trial; they accumulate (`reflexion`).
    Reflexion,
    /// The failed trial and a reflection on it, the newest only (`last_trial_and_reflexion`).
    LastTrialAndReflexion,
}

/// Every strategy, in the order Reflexion's paper lists them.
pub const REFLECTS: [Reflect; 4] = [
    Reflect::None,
    Reflect::LastTrial,
    Reflect::Reflexion,
    Reflect::LastTrialAndReflexion,
];

impl Reflect {
    pub fn as_str(self) -> &'static str {
        match self {
            Reflect::None => "none",
            Reflect::LastTrial => "last-trial",
            Reflect::Reflexion => "reflexion",
            Reflect::LastTrialAndReflexion => "last-trial-and-reflexion",
        }
    }

    /// Whether the model is asked for a reflection before a failed question's next trial.
    pub fn asks_reflection(self) -> bool {
        matches!(self, Reflect::Reflexion | Reflect::LastTrialAndReflexion)
    }

    /// Whether the failed trial itself goes into the next prompt.
    pub fn shows_last_trial(self) -> bool {
        matches!(self, Reflect::LastTrial | Reflect::LastTrialAndReflexion)
    }
}

impl fmt::Display for Reflect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Reflect {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        REFLECTS
            .into_iter()
            .find(|reflect| reflect.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<String> = REFLECTS.iter().map(|reflect| format!("`{reflect}`")).collect();
                format!("unknown strategy `{s}`: expected one of {}", names.join(", "))
            })
    }
}

impl serde::Serialize for Reflect {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Reflect {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// CoT-SC's rule for stopping before all N samples are asked (`--sc-stop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopRule {
    /// Stop once the leading answer cannot be overtaken by the samples not yet asked: the
    /// majority of all N, with fewer asked.
    Exact,
    /// Adaptive-Consistency's Beta rule (Aggarwal et al., 2023): stop once the leader's share
    /// over the runner-up's is above 1/2 with the given confidence.
    Beta,
}

/// Every stopping rule.
pub const STOP_RULES: [StopRule; 2] = [StopRule::Exact, StopRule::Beta];

/// `--sc-batch`'s default: samples asked five at a time.
pub const DEFAULT_SC_BATCH: usize = 5;
/// `--sc-confidence`'s default, Adaptive-Consistency's threshold.
pub const DEFAULT_SC_CONFIDENCE: f64 = 0.95;

impl StopRule {
    pub fn as_str(self) -> &'static str {
        match self {
            StopRule::Exact => "exact",
            StopRule::Beta => "beta",
        }
    }
}

impl fmt::Display for StopRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for StopRule {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        STOP_RULES
            .into_iter()
            .find(|rule| rule.as_str() == s)
            .ok_or_else(|| format!("unknown stopping rule `{s}`: expected `exact` or `beta`"))
    }
}

/// How CoT-SC stops early (`--sc-stop`, `--sc-batch`, `--sc-confidence`): the rule, the samples
/// asked per request, and the Beta rule's confidence (the default, unused, for `exact`). Written
/// as `{"rule", "batch"}`, with `"confidence"` for `beta`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "ScStopFields", into = "ScStopFields")]
pub struct ScStop {
    pub rule: StopRule,
    pub batch: usize,
    pub confidence: f64,
}

impl ScStop {
    /// `rule` with the default batch and confidence.
    pub fn new(rule: StopRule) -> ScStop {
        ScStop {
            rule,
            batch: DEFAULT_SC_BATCH,
            confidence: DEFAULT_SC_CONFIDENCE,
        }
    }
}

/// `exact, batch 5` or `beta at 0.95, batch 5`, as messages show it.
impl fmt::Display for ScStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rule {
            StopRule::Exact => write!(f, "exact, batch {}", self.batch),
            StopRule::Beta => write!(f, "beta at {}, batch {}", self.confidence, self.batch),
        }
    }
}

/// [`ScStop`] as written: `confidence` only with `beta`.
#[derive(serde::Serialize, serde::Deserialize)]
struct ScStopFields {
    rule: StopRule,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    confidence: Option<f64>,
    batch: usize,
}

impl From<ScStop> for ScStopFields {
    fn from(stop: ScStop) -> ScStopFields {
        ScStopFields {
            rule: stop.rule,
            confidence: (stop.rule == StopRule::Beta).then_some(stop.confidence),
            batch: stop.batch,
        }
    }
}

impl TryFrom<ScStopFields> for ScStop {
    type Error = String;

    fn try_from(fields: ScStopFields) -> Result<ScStop, String> {
        let confidence = match (fields.rule, fields.confidence) {
            (StopRule::Beta, Some(confidence)) => confidence,
            (StopRule::Beta, None) => return Err("stopping rule `beta` needs its `confidence`".to_owned()),
            (StopRule::Exact, None) => DEFAULT_SC_CONFIDENCE,
            (StopRule::Exact, Some(_)) => {
                return Err("stopping rule `exact` takes no `confidence`".to_owned());
            }
        };
        Ok(ScStop {
            rule: fields.rule,
            batch: fields.batch,
            confidence,
        })
    }
}

impl serde::Serialize for StopRule {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for StopRule {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for method in METHODS {
            assert_eq!(method.as_str().parse::<Method>(), Ok(method));
            let json = serde_json::to_string(&method).unwrap();
            assert_eq!(serde_json::from_str::<Method>(&json).unwrap(), method);
        }
        let error = serde_json::from_str::<Method>("\"tree-of-thoughts\"").unwrap_err();
        assert!(
            error.to_string().contains("unknown method `tree-of-thoughts`"),
            "{error}"
        );
        assert!(!Method::Cot.acts() && Method::CotScThenReact.acts() && Method::Act.acts());
        assert!(Method::ReactThenCotSc.samples() && !Method::Cot.samples());
    }

    #[test]
    fn reflect_names_round_trip() {
        for reflect in REFLECTS {
            assert_eq!(reflect.as_str().parse::<Reflect>(), Ok(reflect));
            let json = serde_json::to_string(&reflect).unwrap();
            assert_eq!(serde_json::from_str::<Reflect>(&json).unwrap(), reflect);
        }
        assert!(
            "last_trial"
                .parse::<Reflect>()
                .unwrap_err()
                .contains("`last-trial`")
        );
    }

    #[test]
    fn stopping_rules_round_trip_with_beta_alone_keeping_its_confidence() {
        for rule in STOP_RULES {
            assert_eq!(rule.as_str().parse::<StopRule>(), Ok(rule));
        }
        let exact = ScStop::new(StopRule::Exact);
        let json = serde_json::to_string(&exact).unwrap();
        assert_eq!(json, r#"{"rule":"exact","batch":5}"#);
        assert_eq!(serde_json::from_str::<ScStop>(&json).unwrap(), exact);
        let beta = ScStop {
            confidence: 0.9,
            ..ScStop::new(StopRule::Beta)
        };
        let json = serde_json::to_string(&beta).unwrap();
        assert_eq!(json, r#"{"rule":"beta","confidence":0.9,"batch":5}"#);
        assert_eq!(serde_json::from_str::<ScStop>(&json).unwrap(), beta);
        let error = serde_json::from_str::<ScStop>(r#"{"rule":"beta","batch":5}"#).unwrap_err();
        assert!(error.to_string().contains("needs its `confidence`"), "{error}");
        let error = serde_json::from_str::<ScStop>(r#"{"rule":"vote","batch":5}"#).unwrap_err();
        assert!(
            error.to_string().contains("unknown stopping rule `vote`"),
            "{error}"
        );
    }
}
