//! `Task`: what a question asks the agent to do, and how its answer is scored — HotpotQA's
//! multi-hop questions (answer EM/F1) or FEVER's claims (label accuracy). Runs record it.

use std::fmt;

/// What a question file asks the agent to do, and how its answers are scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    /// Multi-hop questions, scored by the official answer EM/F1.
    HotpotQa,
    /// Claims labelled SUPPORTS / REFUTES / NOT ENOUGH INFO, scored by label accuracy.
    Fever,
}

impl Task {
    pub fn as_str(self) -> &'static str {
        match self {
            Task::HotpotQa => "hotpotqa",
            Task::Fever => "fever",
        }
    }

    /// The name runs record for the bundled examples of this task, in any format.
    pub fn name(self) -> &'static str {
        self.as_str()
    }

    /// The task whose bundled examples a recorded name refers to, if it is one.
    pub fn named(name: &str) -> Option<Task> {
        match name {
            "hotpotqa" => Some(Task::HotpotQa),
            "fever" => Some(Task::Fever),
            _ => None,
        }
    }
}

impl fmt::Display for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
