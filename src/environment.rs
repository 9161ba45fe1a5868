//! `Environment`: turns an action into the observation the model reads next.
//!
//! [`Workbench`] runs actions for real against a docstore and the registered tools;
//! [`Recording`] serves a run file's recorded observations and falls back to a workbench.

use futures::future::BoxFuture;

use crate::action::{Action, ActionError, ActionGrammar, paper_action_text};
use crate::docstore::{Docstore, DocstoreError};
use crate::profile::Profile;
use crate::tool::{ToolError, Toolbox};

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
            match action {
                Ok(Action::Search(entity)) => Ok(self.docstore.search(entity).await?),
                Ok(Action::Lookup(keyword)) => Ok(self.docstore.lookup(keyword)),
                Ok(Action::Think(_)) => Ok("Nice thought.".to_owned()),
                Ok(Action::Tool { name, argument }) => match self.toolbox.get(name) {
                    Some(tool) => Ok(tool.call(argument).await?),
                    None => Ok(invalid_observation(&self.grammar, written)),
                },
                // The agent ends the run on Finish; an environment asked anyway says so.
                Ok(Action::Finish(_)) => Ok("Episode finished.".to_owned()),
                Err(_) => Ok(invalid_observation(&self.grammar, written)),
            }
        })
    }
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

/// A run file's recorded observations, step by step; steps without one go to `live`.
pub struct Recording {
    observations: Vec<Option<String>>,
    live: Option<Box<dyn Environment>>,
}

impl Recording {
    pub fn new(observations: Vec<Option<String>>, live: Option<Box<dyn Environment>>) -> Recording {
        Recording { observations, live }
    }

    /// Whether every step before the last has its observation, so no live environment is needed.
    pub fn is_complete(observations: &[Option<String>]) -> bool {
        match observations.split_last() {
            Some((_, before)) => before.iter().all(Option::is_some),
            None => true,
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
            match &mut self.live {
                Some(live) => live.observe(step, action, written).await,
                None => Err(EnvironmentError::NotRecorded { step }),
            }
        })
    }
}
