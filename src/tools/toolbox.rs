//! `Tool` and `Toolbox`: extra bracketed actions (`Calculate[...]`, `WebSearch[...]`, a user's own),
//! and the names a tool's action has as a function (`--api tools`).

use std::sync::Arc;

use futures::future::BoxFuture;

/// An extra action the model may call as `Name[argument]`.
///
/// A tool that cannot do what it was asked (a bad expression, no search result) answers with an
/// observation saying so; `Err` is for infrastructure failures after retries, which end the run.
pub trait Tool: Send + Sync {
    /// The bracket name, e.g. `Calculate`. Matched case-insensitively.
    fn name(&self) -> &str;

    /// One line for the prompt's action list, e.g.
    /// `Calculate[expression], which evaluates an arithmetic expression and returns the result.`
    fn description(&self) -> &str;

    /// Few-shot examples showing the tool in use, appended to the prompt when the tool is on.
    fn examples(&self) -> Option<&str> {
        None
    }

    fn call<'a>(&'a self, argument: &'a str) -> BoxFuture<'a, Result<String, ToolError>>;
}

/// An infrastructure failure of a tool, after its retries.
#[derive(Debug, thiserror::Error)]
#[error("tool `{tool}` failed")]
pub struct ToolError {
    pub tool: String,
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// The registered extra tools, in the order the prompt lists them.
#[derive(Clone, Default)]
pub struct Toolbox {
    tools: Vec<Arc<dyn Tool>>,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|tool| tool.name()))
            .finish()
    }
}

impl Toolbox {
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools
            .retain(|existing| !existing.name().eq_ignore_ascii_case(tool.name()));
        self.tools.push(tool);
    }

    pub fn tools(&self) -> impl Iterator<Item = &dyn Tool> {
        self.tools.iter().map(|tool| tool.as_ref())
    }

    pub fn names(&self) -> impl Iterator<Item = String> + '_ {
        self.tools.iter().map(|tool| tool.name().to_owned())
    }

    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        self.tools().find(|tool| tool.name().eq_ignore_ascii_case(name))
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// `WebSearch` → `web_search`, `GetInvoice` → `get_invoice`, `HTTPGet` → `http_get`.
pub fn function_name(action: &str) -> String {
    let chars: Vec<char> = action.chars().collect();
    let mut name = String::with_capacity(action.len() + 4);
    for (idx, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() && idx > 0 {
            let previous = chars[idx - 1];
            let next_is_lower = chars.get(idx + 1).is_some_and(char::is_ascii_lowercase);
            if previous.is_ascii_lowercase()
                || previous.is_ascii_digit()
                || (previous.is_ascii_uppercase() && next_is_lower)
            {
                name.push('_');
            }
        }
        name.push(c.to_ascii_lowercase());
    }
    name
}

/// A function name with case, `_` and `-` ignored: names with one key are one function to a reply
/// (`Search`, `webSearch`, `web-search`), so two tools must not share one.
pub fn function_key(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_' && *c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}
