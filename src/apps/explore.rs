//! `explore`: run `Search[...]`, `Lookup[...]` and tool actions by hand against a docstore —
//! the observations the model would read, one action at a time, with the cursor kept between them.

use std::io::{BufRead, Write};

use serde::Serialize;

use crate::agent::action::{Action, ActionGrammar};
use crate::agent::environment::{Environment, EnvironmentError, Workbench};
use crate::base::input::{InputLine, InputLines, Interaction, LEAVE_HINT};
use crate::base::profile::Profile;
use crate::docstore::DocstoreSource;
use crate::tools::Toolbox;

/// How `explore` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExploreFormat {
    /// `Action: ...` / `Observation: ...` lines (interactive: the observation only).
    Text,
    /// One `{"action": ..., "observation": ...}` line per action.
    Json,
}

/// One action and what it brought back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explored {
    /// The action as the scratchpad would show it.
    pub action: String,
    pub observation: String,
}

/// One explorer session: a docstore explorer and the tools, as one question's agent has them.
pub struct Explore {
    workbench: Workbench,
    grammar: ActionGrammar,
    step: usize,
}

impl Explore {
    pub fn new(source: &dyn DocstoreSource, toolbox: Toolbox, profile: Profile) -> Explore {
        let grammar = ActionGrammar::new(profile, toolbox.names());
        Explore {
            workbench: Workbench::new(source.open(&[]), toolbox, grammar.clone()),
            grammar,
            step: 0,
        }
    }

    /// Runs one action written as the model would write it.
    pub async fn run(&mut self, written: &str) -> Result<Explored, EnvironmentError> {
        self.step += 1;
        let parsed = self.grammar.parse(written);
        let observation = self.workbench.observe(self.step, &parsed, written).await?;
        Ok(Explored {
            action: self.grammar.display(written, &parsed),
            observation,
        })
    }

    /// `Search[entity]` with `entity` taken as it is (no action to parse): what a tool-calling
    /// agent's `search` tool returns.
    pub async fn search(&mut self, entity: &str) -> Result<String, EnvironmentError> {
        self.run_parsed(Action::Search(entity.to_owned())).await
    }

    /// `Lookup[keyword]` with `keyword` taken as it is, on the current page from the cursor.
    pub async fn lookup(&mut self, keyword: &str) -> Result<String, EnvironmentError> {
        self.run_parsed(Action::Lookup(keyword.to_owned())).await
    }

    async fn run_parsed(&mut self, action: Action) -> Result<String, EnvironmentError> {
        self.step += 1;
        let written = action.to_string();
        self.workbench.observe(self.step, &Ok(action), &written).await
    }
}

/// Runs `actions` in order, printing each result. An infrastructure failure stops the run.
pub async fn run_actions(
    explore: &mut Explore,
    actions: &[String],
    format: ExploreFormat,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    for written in actions {
        let explored = explore.run(written).await?;
        match format {
            ExploreFormat::Text => {
                writeln!(out, "Action: {}", explored.action)?;
                writeln!(out, "Observation: {}", explored.observation.trim_end())?;
            }
            ExploreFormat::Json => writeln!(out, "{}", serde_json::to_string(&explored)?)?,
        }
        out.flush()?;
    }
    Ok(())
}

/// Reads actions line by line until the session ends ([`InputLines`]), keeping the page and the
/// cursor between lines. `errors` (stderr) gets error messages, and on a terminal how to leave and
/// the `> ` prompt; a failed action, or a line that is not UTF-8, is reported there (with its line
/// number) and the session goes on.
pub async fn run_interactive(
    explore: &mut Explore,
    input: &mut dyn BufRead,
    format: ExploreFormat,
    out: &mut dyn Write,
    errors: &mut dyn Write,
    interaction: Interaction,
) -> anyhow::Result<()> {
    if interaction == Interaction::Terminal {
        let _ = writeln!(errors, "{LEAVE_HINT}");
    }
    let mut lines = InputLines::new(input);
    loop {
        if interaction == Interaction::Terminal {
            let _ = write!(errors, "> ");
            let _ = errors.flush();
        }
        let Some((line_number, line)) = lines.next_line()? else {
            break;
        };
        let action = match line {
            InputLine::Text(action) => action,
            InputLine::Blank => continue,
            InputLine::NotUtf8(_) => {
                let _ = writeln!(errors, "error: line {line_number} is not valid UTF-8: skipped");
                continue;
            }
        };
        match explore.run(&action).await {
            Ok(explored) => match format {
                ExploreFormat::Text => writeln!(out, "{}", explored.observation.trim_end())?,
                ExploreFormat::Json => writeln!(out, "{}", serde_json::to_string(&explored)?)?,
            },
            Err(error) => {
                let _ = writeln!(errors, "error: {:#}", anyhow::Error::new(error));
            }
        }
        out.flush()?;
    }
    Ok(())
}
