//! User-defined tools: an invoice agent with `GetInvoice`, `Diff` and `Total`, its own few-shot
//! examples, run against a recorded model. `cargo run --example invoices` prints the trajectory;
//! `cargo test` runs the test at the end, which holds what it prints.
//!
//! Swap the `ReplayLlm` for a real model to let it answer new questions about the invoices.

use std::sync::Arc;

use futures::future::BoxFuture;
use react_docstore::agent::Agent;
use react_docstore::agent::Episode;
use react_docstore::agent::action::ActionGrammar;
use react_docstore::agent::environment::Workbench;
use react_docstore::agent::fewshot::{Fewshot, Format, Header};
use react_docstore::agent::prompt::{Prompt, PromptOptions};
use react_docstore::base::profile::Profile;
use react_docstore::docstore::{Docstore, DocstoreError};
use react_docstore::llm::ReplayLlm;
use react_docstore::tools::{Tool, ToolError, Toolbox};

/// The instruction and worked examples. With `Header::InExamples` the prompt carries its own
/// instruction instead of the Wikipedia one.
const FEWSHOT: &str = "\
Answer questions about invoices with interleaving Thought, Action, Observation steps. Thought can reason about the current situation, and Action can be four types:
(1) GetInvoice[name], which returns the amount of the invoice with that name.
(2) Diff[a b], which returns a minus b.
(3) Total[a b ...], which returns the sum of the numbers.
(4) Finish[answer], which returns the answer and finishes the task.
Here are some examples.
Question: What do invoices X and Y come to together?
Thought 1: I need the amounts of invoices X and Y, then their total.
Action 1: GetInvoice[X]
Observation 1: 320
Thought 2: Invoice X is 320. Now invoice Y.
Action 2: GetInvoice[Y]
Observation 2: 80
Thought 3: Invoice Y is 80. I need the total of 320 and 80.
Action 3: Total[320 80]
Observation 3: 400
Thought 4: Invoices X and Y come to 400.
Action 4: Finish[400]
";

/// The invoices the agent can see.
const INVOICES: [(&str, i64); 3] = [("A", 1500), ("B", 20000), ("C", 750)];

/// `GetInvoice[name]`: an invoice's amount.
struct GetInvoice;

impl Tool for GetInvoice {
    fn name(&self) -> &str {
        "GetInvoice"
    }

    fn description(&self) -> &str {
        "GetInvoice[name], which returns the amount of the invoice with that name."
    }

    fn call<'a>(&'a self, argument: &'a str) -> BoxFuture<'a, Result<String, ToolError>> {
        let observation = match INVOICES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(argument.trim()))
        {
            Some((_, amount)) => amount.to_string(),
            None => format!("There is no invoice {argument}. The invoices are A, B and C."),
        };
        Box::pin(async move { Ok(observation) })
    }
}

/// `Diff[a b]`: `a - b`.
struct Diff;

impl Tool for Diff {
    fn name(&self) -> &str {
        "Diff"
    }

    fn description(&self) -> &str {
        "Diff[a b], which returns a minus b."
    }

    fn call<'a>(&'a self, argument: &'a str) -> BoxFuture<'a, Result<String, ToolError>> {
        let observation = match numbers(argument).as_deref() {
            Some([a, b]) => (a - b).to_string(),
            _ => format!("Diff needs two numbers, like Diff[20000 1500]; found `{argument}`."),
        };
        Box::pin(async move { Ok(observation) })
    }
}

/// `Total[a b ...]`: the sum.
struct Total;

impl Tool for Total {
    fn name(&self) -> &str {
        "Total"
    }

    fn description(&self) -> &str {
        "Total[a b ...], which returns the sum of the numbers."
    }

    fn call<'a>(&'a self, argument: &'a str) -> BoxFuture<'a, Result<String, ToolError>> {
        let observation = match numbers(argument) {
            Some(numbers) if !numbers.is_empty() => numbers.iter().sum::<i64>().to_string(),
            _ => format!("Total needs numbers, like Total[1500 20000]; found `{argument}`."),
        };
        Box::pin(async move { Ok(observation) })
    }
}

/// Whole numbers separated by spaces or commas.
fn numbers(argument: &str) -> Option<Vec<i64>> {
    argument
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|word| !word.is_empty())
        .map(|word| word.parse().ok())
        .collect()
}

/// The agent reads no encyclopedia: Search and Lookup say so.
struct NoDocstore;

impl Docstore for NoDocstore {
    fn search<'a>(&'a mut self, _entity: &'a str) -> BoxFuture<'a, Result<String, DocstoreError>> {
        Box::pin(async { Ok("There is no search here: use GetInvoice, Diff or Total.".to_owned()) })
    }

    fn lookup(&mut self, _keyword: &str) -> String {
        "There is no lookup here: use GetInvoice, Diff or Total.".to_owned()
    }
}

/// What the model wrote for the question, step by step (recorded by hand for this example).
fn recorded_completions() -> Vec<Vec<String>> {
    [
        " I need the amounts of invoices A, B and C. Then I subtract the total of A and C from B.\nAction 1: GetInvoice[A]",
        " Invoice A is 1500. Now invoice B.\nAction 2: GetInvoice[B]",
        " Invoice B is 20000. Now invoice C.\nAction 3: GetInvoice[C]",
        " Invoice C is 750. I need the total of A and C: 1500 and 750.\nAction 4: Total[1500 750]",
        " A and C come to 2250. I need 20000 minus 2250.\nAction 5: Diff[20000 2250]",
        " Invoice B is 17750 more than invoices A and C together.\nAction 6: Finish[17750]",
    ]
    .into_iter()
    .map(|completion| vec![completion.to_owned()])
    .collect()
}

const QUESTION: &str = "How much more is invoice B than invoices A and C together?";

/// Registers the three tools and runs the agent on [`QUESTION`] with the recorded model.
async fn run_invoice_agent() -> Episode {
    let mut toolbox = Toolbox::default();
    toolbox.register(Arc::new(GetInvoice));
    toolbox.register(Arc::new(Diff));
    toolbox.register(Arc::new(Total));

    let fewshot = Fewshot {
        name: "invoices".to_owned(),
        examples: FEWSHOT.to_owned(),
        input_label: "Question".to_owned(),
        header: Header::InExamples,
        format: Format::React,
    };
    let profile = Profile::Default;
    let prompt = Prompt::new(profile, &fewshot, &toolbox, &PromptOptions::default());
    let grammar = ActionGrammar::new(profile, toolbox.names());
    let mut workbench = Workbench::new(Box::new(NoDocstore), toolbox, grammar.clone());
    let llm = ReplayLlm::new("recorded", recorded_completions());
    let agent = Agent::new(&llm, &prompt, &grammar, 8);
    agent.run(QUESTION, &mut workbench, &mut |_| {}).await
}

#[tokio::main]
async fn main() {
    let episode = run_invoice_agent().await;
    println!("{}", episode.trajectory());
    println!("Answer: {}", episode.run.answer.as_deref().unwrap_or(""));
}

#[cfg(test)]
mod tests {
    use super::run_invoice_agent;

    /// The agent answers from its own tools, every action valid.
    #[tokio::test]
    async fn invoice_example_runs() {
        let episode = run_invoice_agent().await;
        assert_eq!(episode.run.answer.as_deref(), Some("17750"));
        assert_eq!(episode.run.usage.invalid_actions, 0);
        insta::assert_snapshot!(episode.trajectory(), @r"
        Question: How much more is invoice B than invoices A and C together?
        Thought 1: I need the amounts of invoices A, B and C. Then I subtract the total of A and C from B.
        Action 1: GetInvoice[A]
        Observation 1: 1500
        Thought 2: Invoice A is 1500. Now invoice B.
        Action 2: GetInvoice[B]
        Observation 2: 20000
        Thought 3: Invoice B is 20000. Now invoice C.
        Action 3: GetInvoice[C]
        Observation 3: 750
        Thought 4: Invoice C is 750. I need the total of A and C: 1500 and 750.
        Action 4: Total[1500 750]
        Observation 4: 2250
        Thought 5: A and C come to 2250. I need 20000 minus 2250.
        Action 5: Diff[20000 2250]
        Observation 5: 17750
        Thought 6: Invoice B is 17750 more than invoices A and C together.
        Action 6: Finish[17750]
        ");
    }
}
