//! The extra tools that come with the crate — [`calculator::Calculate`], [`websearch::WebSearch`],
//! [`CommandTool`] — and
//! [`ToolsConfig`], which turns `--tools` / `--tool NAME=COMMAND` into a [`Toolbox`].
//!
//! A Rust user adds a tool by implementing [`Tool`] and registering it with
//! [`Toolbox::register`]; `examples/invoices.rs` shows how.
//!
//! A layer of its own, above the run records (a run records its tools) and below the agent that
//! calls them.

mod toolbox;
pub mod calculator;
mod command;
pub mod websearch;

use std::str::FromStr;
use std::sync::Arc;

pub use command::{CommandTool, CommandToolConfig, CommandToolConfigError};

use crate::record::run::ToolDescription;
use calculator::Calculate;
pub use toolbox::{Tool, ToolError, Toolbox, function_key, function_name};
use websearch::{Network, WebSearch, WebSearchConfig, WebSearchError};

/// A tool the crate brings, switched on by name with `--tools`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinTool {
    Calculate,
    WebSearch,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tool `{name}`, expected `calculate` or `websearch`")]
pub struct UnknownToolError {
    name: String,
}

impl FromStr for BuiltinTool {
    type Err = UnknownToolError;

    /// `calculate` (or `calculator`), `websearch` (or `web-search`), in any case.
    fn from_str(name: &str) -> Result<BuiltinTool, UnknownToolError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "calculate" | "calculator" => Ok(BuiltinTool::Calculate),
            "websearch" | "web-search" | "web_search" => Ok(BuiltinTool::WebSearch),
            _ => Err(UnknownToolError {
                name: name.to_owned(),
            }),
        }
    }
}

/// Which extra tools a run has, and how they reach their services.
#[derive(Debug, Clone, Default)]
pub struct ToolsConfig {
    /// Built-in tools, in the order the prompt lists them.
    pub builtin: Vec<BuiltinTool>,
    /// `--tool NAME=COMMAND` tools, listed after the built-in ones.
    pub commands: Vec<CommandToolConfig>,
    /// Used when [`BuiltinTool::WebSearch`] is on.
    pub websearch: WebSearchConfig,
}

/// Why the configured tools cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum ToolsConfigError {
    #[error("cannot open the `WebSearch` tool")]
    WebSearch(#[from] WebSearchError),
    #[error("the tool name `{name}` is registered twice")]
    Duplicate { name: String },
    /// Two names a model's call cannot tell apart: `MyTool` and `My_Tool` are both the function
    /// `my_tool`, and a call reaches only the first.
    #[error(
        "the tools `{first}` and `{second}` are one function to a model (`{function}`; case and `_` do not count): rename one"
    )]
    SameFunction {
        first: String,
        second: String,
        function: String,
    },
}

impl ToolsConfig {
    /// The toolbox these tools make: built-in tools first, then command tools, each name once and
    /// each function name (`--api tools`) once.
    pub fn open_toolbox(&self) -> Result<Toolbox, ToolsConfigError> {
        let mut toolbox = Toolbox::default();
        let mut register = |tool: Arc<dyn Tool>| {
            let name = tool.name();
            if toolbox.get(name).is_some() {
                return Err(ToolsConfigError::Duplicate {
                    name: name.to_owned(),
                });
            }
            let key = function_key(name);
            if let Some(first) = toolbox.names().find(|first| function_key(first) == key) {
                return Err(ToolsConfigError::SameFunction {
                    first,
                    second: name.to_owned(),
                    function: function_name(name),
                });
            }
            toolbox.register(tool);
            Ok(())
        };
        for builtin in &self.builtin {
            match builtin {
                BuiltinTool::Calculate => register(Arc::new(Calculate))?,
                BuiltinTool::WebSearch => register(Arc::new(WebSearch::new(self.websearch.clone())?))?,
            }
        }
        for command in &self.commands {
            register(Arc::new(CommandTool::new(command.clone())))?;
        }
        Ok(toolbox)
    }
}

/// The built-in tool a run's record names (`Calculate`, `WebSearch`, in any case), set up for its
/// prompt line and examples only: its `WebSearch` asks no service.
pub fn recorded_builtin(name: &str) -> Option<Arc<dyn Tool>> {
    let tool: Arc<dyn Tool> = match name.parse::<BuiltinTool>().ok()? {
        BuiltinTool::Calculate => Arc::new(Calculate),
        BuiltinTool::WebSearch => {
            let config = WebSearchConfig {
                // Never asked. Any URL but the default one needs no key.
                search_url: "http://127.0.0.1:9/search".to_owned(),
                network: Network::Offline,
                ..WebSearchConfig::default()
            };
            Arc::new(WebSearch::new(config).ok()?)
        }
    };
    // `Calculator` is another tool's name in a record: only the names the tools register count.
    tool.name().eq_ignore_ascii_case(name).then_some(tool)
}

/// What a run records of its tools beyond their names: every tool whose prompt line and examples
/// [`recorded_builtin`] does not make again from its name (a `--tool NAME=COMMAND` tool, a
/// library user's own).
pub fn descriptions_to_record(toolbox: &Toolbox) -> Vec<ToolDescription> {
    toolbox
        .tools()
        .filter(|tool| {
            recorded_builtin(tool.name()).is_none_or(|builtin| {
                builtin.name() != tool.name()
                    || builtin.description() != tool.description()
                    || builtin.examples() != tool.examples()
            })
        })
        .map(|tool| ToolDescription {
            name: tool.name().to_owned(),
            description: tool.description().to_owned(),
            examples: tool.examples().map(str::to_owned),
        })
        .collect()
}
