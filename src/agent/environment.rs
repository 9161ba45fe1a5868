//! `Environment`: turns an action into the observation the model reads next.
//!
//! [`Workbench`] runs actions for real against a docstore and the registered tools;
//! [`Recording`] serves a run file's recorded observations and falls back to a workbench.

use futures::future::BoxFuture;

use crate::agent::action::{Action, ActionError, ActionGrammar, paper_action_text};
use crate::base::limits::MAX_ARGUMENT_BYTES;
use crate::base::profile::Profile;
use crate::docstore::{Docstore, DocstoreError};
use crate::tools::{ToolError, Toolbox};

/// Produces observations. `Finish` never reaches it: the agent ends the run itself.
pub trait Environment: Send {
    /// The observation for step `step`, whose action was written as `written` and parsed as `action`.
    fn observe<'a>(
        &'a mut self,
        step: usize,
        action: &'a Result<Action, ActionError>,
        written: &'a str,
    ) -> BoxFuture<'a, Result<String, EnvironmentError>>;
}

/// An environment whose infrastructure failures pass by `on_error` on their way to the agent:
/// what an evaluation classifies, the unrecorded step a replay reports.
pub struct Inspected<E, F> {
    environment: E,
    on_error: F,
}

impl<E, F> Inspected<E, F> {
    pub fn new(environment: E, on_error: F) -> Inspected<E, F> {
        Inspected {
            environment,
            on_error,
        }
    }
}

impl<E: Environment, F: FnMut(&EnvironmentError) + Send> Environment for Inspected<E, F> {
    fn observe<'a>(
        &'a mut self,
        step: usize,
        action: &'a Result<Action, ActionError>,
        written: &'a str,
    ) -> BoxFuture<'a, Result<String, EnvironmentError>> {
        Box::pin(async move {
            let result = self.environment.observe(step, action, written).await;
            if let Err(error) = &result {
                (self.on_error)(error);
            }
            result
        })
    }
}

/// An infrastructure failure while producing an observation.
#[derive(Debug, thiserror::Error)]
pub enum EnvironmentError {
    #[error(transparent)]
    Docstore(#[from] DocstoreError),
    #[error(transparent)]
    Tool(#[from] ToolError),
    #[error("the run file records no observation for step {step} and no docstore is configured")]
    NotRecorded { step: usize },
}

/// The live environment: a docstore explorer for Search/Lookup, the toolbox for extra actions.
pub struct Workbench {
    docstore: Box<dyn Docstore>,
    toolbox: Toolbox,
    grammar: ActionGrammar,
}

impl Workbench {
    pub fn new(docstore: Box<dyn Docstore>, toolbox: Toolbox, grammar: ActionGrammar) -> Workbench {
        Workbench {
            docstore,
            toolbox,
            grammar,
        }
    }
}

impl Environment for Workbench {
    fn observe<'a>(
        &'a mut self,
        _step: usize,
        action: &'a Result<Action, ActionError>,
        written: &'a str,
    ) -> BoxFuture<'a, Result<String, EnvironmentError>> {
        Box::pin(async move {
            if let Some(observation) = observe_without_world(&self.grammar, action, written) {
                return Ok(observation);
            }
            match action {
                Ok(Action::Search(entity)) => Ok(self.docstore.search(entity).await?),
                Ok(Action::Lookup(keyword)) => Ok(self.docstore.lookup(keyword)),
                Ok(Action::Tool { name, argument }) => match self.toolbox.get(name) {
                    Some(tool) => Ok(tool.call(argument).await?),
                    None => Ok(invalid_observation(&self.grammar, written)),
                },
                Ok(Action::Think(_) | Action::Finish(_)) | Err(_) => {
                    // invariant: `observe_without_world` answers `Think`, `Finish` and every parse error before this match
                    unreachable!("answered by observe_without_world")
                }
            }
        })
    }
}

/// The observations that need no docstore or tool: invalid actions, the paper's `think[...]`,
/// and `Finish` (which the agent handles itself; an environment asked anyway says so).
fn observe_without_world(
    grammar: &ActionGrammar,
    action: &Result<Action, ActionError>,
    written: &str,
) -> Option<String> {
    match action {
        Err(_) => Some(invalid_observation(grammar, written)),
        Ok(Action::Think(_)) => Some("Nice thought.".to_owned()),
        Ok(Action::Finish(_)) => Some("Episode finished.".to_owned()),
        Ok(Action::Search(argument) | Action::Lookup(argument) | Action::Tool { argument, .. }) => {
            over_long_argument(action, argument)
        }
    }
}

/// The observation of an action whose argument is longer than any an action may have
/// ([`MAX_ARGUMENT_BYTES`], the limit `serve` and `mcp` refuse above): the model reads why, and
/// nothing is searched, looked up or called. `None` for an argument within the limit.
fn over_long_argument(action: &Result<Action, ActionError>, argument: &str) -> Option<String> {
    if argument.len() <= MAX_ARGUMENT_BYTES {
        return None;
    }
    let (name, hint) = match action {
        Ok(Action::Search(_)) => ("Search", "Search a title or a few words."),
        Ok(Action::Lookup(_)) => ("Lookup", "Look up a word or a short phrase."),
        Ok(Action::Tool { name, .. }) => (name.as_str(), "Write a shorter one."),
        _ => ("the action", "Write a shorter one."),
    };
    Some(format!(
        "The argument of {name} is {} bytes, more than the {MAX_ARGUMENT_BYTES} an argument can be. {hint}",
        argument.len()
    ))
}

/// `Invalid action: ...`, with the list of valid actions in the `default` profile.
pub fn invalid_observation(grammar: &ActionGrammar, written: &str) -> String {
    match grammar.profile() {
        Profile::Paper => format!("Invalid action: {}", paper_action_text(written)),
        Profile::Default => format!(
            "Invalid action: {}. Valid actions are {}",
            written.trim(),
            grammar.valid_actions()
        ),
    }
}

/// A run file's recorded observations, step by step. A step without one gets the observation
/// that needs no world (an invalid action's), or goes to `live`.
pub struct Recording {
    observations: Vec<Option<String>>,
    grammar: ActionGrammar,
    live: Option<Box<dyn Environment>>,
}

impl Recording {
    pub fn new(
        observations: Vec<Option<String>>,
        grammar: ActionGrammar,
        live: Option<Box<dyn Environment>>,
    ) -> Recording {
        Recording {
            observations,
            grammar,
            live,
        }
    }
}

impl Environment for Recording {
    fn observe<'a>(
        &'a mut self,
        step: usize,
        action: &'a Result<Action, ActionError>,
        written: &'a str,
    ) -> BoxFuture<'a, Result<String, EnvironmentError>> {
        Box::pin(async move {
            if let Some(Some(observation)) = self.observations.get(step.wrapping_sub(1)) {
                return Ok(observation.clone());
            }
            if let Some(observation) = observe_without_world(&self.grammar, action, written) {
                return Ok(observation);
            }
            match &mut self.live {
                Some(live) => live.observe(step, action, written).await,
                None => Err(EnvironmentError::NotRecorded { step }),
            }
        })
    }
}
