//! `AgentSetup`: what `ask`, `chat` and `eval` share of how the agent is set up (profile, method,
//! CoT-SC's sampling, step budget), and `SetupError`: the combinations of options it refuses —
//! the same refusals, in the same words, for the command line and for a program calling the
//! library.

use crate::base::method::{Method, Reflect, ScStop};
use crate::base::profile::Profile;
use crate::base::task::Task;
use crate::llm::openai::Api;
use crate::solver::{DEFAULT_SAMPLE_TEMPERATURE, DEFAULT_SAMPLES, MethodConfig};
use crate::tools::Toolbox;

/// How the agent is set up, as every command that runs it takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSetup {
    pub profile: Profile,
    pub method: Method,
    /// The step budget; `None`: the method's own for the task ([`MethodConfig::max_steps`]).
    pub max_steps: Option<usize>,
    /// CoT-SC's samples per question; `None`: [`DEFAULT_SAMPLES`].
    pub samples: Option<usize>,
    /// CoT-SC's sampling temperature; `None`: [`DEFAULT_SAMPLE_TEMPERATURE`].
    pub sample_temperature: Option<f64>,
    /// When CoT-SC stops sampling (`--sc-stop`); `None`: all N are asked.
    pub sc_stop: Option<ScStop>,
}

impl Default for AgentSetup {
    /// ReAct under the `default` profile, with the method's own budget and sampling.
    fn default() -> AgentSetup {
        AgentSetup {
            profile: Profile::Default,
            method: Method::React,
            max_steps: None,
            samples: None,
            sample_temperature: None,
            sc_stop: None,
        }
    }
}

/// Whether the agent has tools besides Search, Lookup and Finish (`--tools`, `--tool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtraTools {
    None,
    Some,
}

impl ExtraTools {
    pub fn of(toolbox: &Toolbox) -> ExtraTools {
        if toolbox.is_empty() {
            ExtraTools::None
        } else {
            ExtraTools::Some
        }
    }
}

/// Options that cannot work together, refused before anything runs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SetupError {
    #[error(
        "the `paper` profile reproduces the ReAct repository, which has no extra tools: drop `--tools`/`--tool` or use `--profile default`"
    )]
    PaperTools,
    #[error(
        "the `paper` profile reproduces the ReAct repository's text format: `--api {api}` needs `--profile default`"
    )]
    PaperFunctionCalls { api: Api },
    #[error(
        "`--api {api}` calls the ReAct actions as functions: `--method {method}` needs `--api chat` or `--api completions`"
    )]
    FunctionCallsMethod { method: Method, api: Api },
    #[error(
        "`--method {method}` takes no actions, so no tools: drop `--tools`/`--tool`, or use a method that acts (`react`, `act`, a backoff)"
    )]
    ToolsWithoutActions { method: Method },
    #[error(
        "`--samples` and `--sample-temperature` set CoT-SC's sampling: `--method {method}` samples nothing (use `cot-sc`, `react-then-cot-sc` or `cot-sc-then-react`)"
    )]
    SamplingUnused { method: Method },
    #[error("`--samples` must be at least 1")]
    NoSamples,
    #[error("`--sample-temperature` must be a number of at least 0, not `{temperature}`")]
    SampleTemperature { temperature: f64 },
    #[error("`--max-steps` is the step budget of ReAct and Act: `--method {method}` takes no steps")]
    StepsUnused { method: Method },
    #[error(
        "`--reflect {strategy}` shows Reflexion's prompt, which offers Search, Lookup and Finish only: drop `--tools`/`--tool`, or use `--reflect none`"
    )]
    ReflectTools { strategy: Reflect },
}

impl AgentSetup {
    /// The method and its sampling, the defaults filled in.
    pub fn method_config(&self) -> MethodConfig {
        MethodConfig {
            method: self.method,
            samples: self.samples.unwrap_or(DEFAULT_SAMPLES),
            sample_temperature: self.sample_temperature.unwrap_or(DEFAULT_SAMPLE_TEMPERATURE),
            sc_stop: self.sc_stop,
        }
    }

    /// The step budget for `task`: the one given, else the method's own.
    pub fn max_steps(&self, task: Task) -> usize {
        self.method_config().max_steps(self.max_steps, task)
    }

    /// Refuses what cannot work together with the model's `api` (when known) and `tools`: the
    /// `paper` profile's text format, function calls for a method other than ReAct, tools for a
    /// method that takes no action, and options the method does not use (rather than ignore them).
    pub fn check(&self, api: Option<Api>, tools: ExtraTools) -> Result<(), SetupError> {
        check_profile_tools(self.profile, tools)?;
        let method = self.method;
        if let Some(api) = api.filter(|api| api.calls_functions()) {
            if self.profile == Profile::Paper {
                return Err(SetupError::PaperFunctionCalls { api });
            }
            if method != Method::React {
                return Err(SetupError::FunctionCallsMethod { method, api });
            }
        }
        if tools == ExtraTools::Some && !method.acts() {
            return Err(SetupError::ToolsWithoutActions { method });
        }
        if !method.samples() && (self.samples.is_some() || self.sample_temperature.is_some()) {
            return Err(SetupError::SamplingUnused { method });
        }
        if self.samples == Some(0) {
            return Err(SetupError::NoSamples);
        }
        if let Some(temperature) = self.sample_temperature
            && !(temperature.is_finite() && temperature >= 0.0)
        {
            return Err(SetupError::SampleTemperature { temperature });
        }
        if !method.acts() && self.max_steps.is_some() {
            return Err(SetupError::StepsUnused { method });
        }
        Ok(())
    }
}

/// The `paper` profile is the ReAct repository's agent, which knows no extra tools.
pub fn check_profile_tools(profile: Profile, tools: ExtraTools) -> Result<(), SetupError> {
    if profile == Profile::Paper && tools == ExtraTools::Some {
        return Err(SetupError::PaperTools);
    }
    Ok(())
}

/// Reflexion's prompt offers Search, Lookup and Finish only: a strategy that shows it takes no
/// extra tools.
pub fn check_reflect_tools(reflect: Reflect, tools: ExtraTools) -> Result<(), SetupError> {
    if reflect != Reflect::None && tools == ExtraTools::Some {
        return Err(SetupError::ReflectTools { strategy: reflect });
    }
    Ok(())
}
