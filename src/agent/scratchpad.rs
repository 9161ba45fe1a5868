//! `Scratchpad`: one question's growing prompt — numbered Thought / Action / Observation lines.

/// The prompt of one question. It only ever grows at its end, so a server's prefix cache hits on
/// every step; the per-call suffixes (`Thought n:`, the fallback's `Action n:`) are appended in
/// place and cut again, never by copying the whole text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scratchpad {
    text: String,
    committed: usize,
}

impl Scratchpad {
    pub(crate) fn new(text: String) -> Scratchpad {
        let committed = text.len();
        Scratchpad { text, committed }
    }

    /// The prompt so far: few-shot prompt, question and the finished steps.
    pub fn text(&self) -> &str {
        &self.text[..self.committed]
    }

    /// The prompt for step `step`'s main call: the scratchpad followed by `Thought {step}:`.
    pub fn thought_prompt(&mut self, step: usize) -> &str {
        self.text.truncate(self.committed);
        self.text.push_str(&format!("Thought {step}:"));
        &self.text
    }

    /// The prompt for the fallback call that asks only for the action, as the ReAct notebook does:
    /// `Thought {step}: {thought}\nAction {step}:`.
    pub fn action_prompt(&mut self, step: usize, thought: &str) -> &str {
        self.text.truncate(self.committed);
        self.text
            .push_str(&format!("Thought {step}: {thought}\nAction {step}:"));
        &self.text
    }

    /// The prompt for an Act step, which has no thought: the scratchpad followed by `Action {step}:`.
    pub fn act_prompt(&mut self, step: usize) -> &str {
        self.text.truncate(self.committed);
        self.text.push_str(&format!("Action {step}:"));
        &self.text
    }

    /// Appends a finished Act step: `Action n: …\nObservation n: …\n`, or `Action n: …\n` for
    /// the last one.
    pub fn push_act_step(&mut self, step: usize, action: &str, observation: Option<&str>) {
        self.text.truncate(self.committed);
        self.text.push_str(&format!("Action {step}: {action}\n"));
        if let Some(observation) = observation {
            self.text
                .push_str(&format!("Observation {step}: {observation}\n"));
        }
        self.committed = self.text.len();
    }

    /// Appends what the model wrote after the last label (a CoT or Standard completion).
    pub fn push_text(&mut self, text: &str) {
        self.text.truncate(self.committed);
        self.text.push_str(text);
        self.committed = self.text.len();
    }

    /// Appends a finished step: `Thought n: …\nAction n: …\nObservation n: …\n`.
    pub fn push_step(&mut self, step: usize, thought: &str, action: &str, observation: &str) {
        self.text.truncate(self.committed);
        self.text.push_str(&format!(
            "Thought {step}: {thought}\nAction {step}: {action}\nObservation {step}: {observation}\n"
        ));
        self.committed = self.text.len();
    }

    /// Appends the last step, which has no observation (`Finish[...]`, or a halt).
    pub fn push_last_step(&mut self, step: usize, thought: &str, action: &str) {
        self.text.truncate(self.committed);
        self.text
            .push_str(&format!("Thought {step}: {thought}\nAction {step}: {action}\n"));
        self.committed = self.text.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_only_grow_at_the_end() {
        let mut scratchpad = Scratchpad::new("Question: q\n".to_owned());
        let first = scratchpad.thought_prompt(1).to_owned();
        assert_eq!(first, "Question: q\nThought 1:");
        let fallback = scratchpad.action_prompt(1, "I think.").to_owned();
        assert!(fallback.starts_with(&first));
        scratchpad.push_step(1, "I think.", "Search[x]", "X is y.");
        let second = scratchpad.thought_prompt(2).to_owned();
        assert!(second.starts_with(&fallback));
        assert_eq!(
            second,
            "Question: q\nThought 1: I think.\nAction 1: Search[x]\nObservation 1: X is y.\nThought 2:"
        );
        assert_eq!(
            scratchpad.text(),
            "Question: q\nThought 1: I think.\nAction 1: Search[x]\nObservation 1: X is y.\n"
        );
    }
}
