//! `Profile`: which behaviour the agent and the docstore follow — the ReAct paper's, byte for byte, or ours.

use std::fmt;
use std::str::FromStr;

/// Which reference behaviour a run follows.
///
/// `Paper` reproduces the ReAct repository (`hotpotqa.ipynb`, `wikienv.py`) byte for byte,
/// defects included; `Default` keeps the same strings and prompt shape but fixes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    Paper,
    #[default]
    Default,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Paper => "paper",
            Profile::Default => "default",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Profile {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "paper" => Ok(Profile::Paper),
            "default" => Ok(Profile::Default),
            other => Err(format!(
                "unknown profile `{other}`, expected `paper` or `default`"
            )),
        }
    }
}
