//! CoT-SC's vote: the majority of the samples' normalised answers.

use std::collections::HashMap;

use crate::base::metrics::normalize_answer;
use crate::record::run::{Sample, Vote};

/// The majority over `samples` of `n_samples` asked at `temperature`. Answers are compared after
/// the official metric's normalisation (`The Beatles.` = `beatles`); the winner is written as
/// first sampled. A tie goes to the answer sampled first. Samples without an answer (or with an
/// empty one, as a recorded run may hold) do not vote, but count in the N the share is taken of.
pub fn majority(samples: &[Sample], n_samples: usize, temperature: f64) -> Vote {
    let tally = tally(samples);
    let winner = leader(&tally);
    Vote {
        answer: winner.and_then(|candidate| samples[candidate.first].answer.clone()),
        votes: winner.map_or(0, |candidate| candidate.votes),
        samples: n_samples,
        answered: tally.iter().map(|candidate| candidate.votes).sum(),
        temperature,
    }
}

/// One normalised answer of a vote: its votes, and the index of the sample that first gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    pub votes: usize,
    pub first: usize,
}

/// The answers `samples` voted for, in the order first sampled. Samples without an answer, or
/// with an empty one, do not vote.
pub fn tally(samples: &[Sample]) -> Vec<Candidate> {
    // normalised answer → its place in `candidates`
    let mut places: HashMap<String, usize> = HashMap::new();
    let mut candidates: Vec<Candidate> = Vec::new();
    for (idx, sample) in samples.iter().enumerate() {
        let Some(answer) = sample.answer.as_ref().filter(|answer| !answer.trim().is_empty()) else {
            continue;
        };
        let place = *places.entry(normalize_answer(answer)).or_insert_with(|| {
            candidates.push(Candidate { votes: 0, first: idx });
            candidates.len() - 1
        });
        candidates[place].votes += 1;
    }
    candidates
}

/// The winner of a tally: the most votes, a tie going to the answer sampled first.
pub fn leader(tally: &[Candidate]) -> Option<&Candidate> {
    tally
        .iter()
        .max_by(|a, b| a.votes.cmp(&b.votes).then(b.first.cmp(&a.first)))
}

/// Whether CoT-SC's majority is too weak to keep (`cot-sc-then-react` backs off to ReAct): it
/// holds fewer than half of the `over` samples it is judged over (N; with `--sc-stop`, what the
/// stopping rule's `verdict_over` says) — 10 of 21 backs off, 11 keeps; no answer at all backs
/// off.
pub fn is_weak(vote: &Vote, over: usize) -> bool {
    vote.answer.is_none() || 2 * vote.votes < over
}

/// Samples of one request holding `answers` and nothing else, for the tests of a vote.
#[cfg(test)]
pub(crate) fn samples(answers: &[Option<&str>]) -> Vec<Sample> {
    answers
        .iter()
        .map(|answer| Sample {
            completion: String::new(),
            answer: answer.map(str::to_owned),
            request: 1,
            reasoning: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_majority_of_normalised_answers_wins_ties_go_to_the_first_sampled() {
        let vote = majority(
            &samples(&[Some("Paris"), Some("the Beatles."), Some("Beatles"), None]),
            4,
            0.7,
        );
        assert_eq!(
            (vote.answer.as_deref(), vote.votes, vote.samples, vote.answered),
            (Some("the Beatles."), 2, 4, 3)
        );
        // A three-way tie: the answer sampled first, whatever order the others come in.
        let vote = majority(
            &samples(&[
                None,
                Some("b"),
                Some("a"),
                Some("c"),
                Some("a"),
                Some("c"),
                Some("b"),
            ]),
            7,
            0.7,
        );
        assert_eq!((vote.answer.as_deref(), vote.votes), (Some("b"), 2));
        // An empty answer (a recorded run may hold one) is no answer: it does not vote.
        let vote = majority(&samples(&[Some(""), Some("  "), Some("x"), Some(" ")]), 4, 0.7);
        assert_eq!(
            (vote.answer.as_deref(), vote.votes, vote.answered),
            (Some("x"), 1, 1)
        );
        let vote = majority(&samples(&[None, None]), 21, 0.7);
        assert_eq!((vote.answer.clone(), vote.votes, vote.answered), (None, 0, 0));
        assert!(is_weak(&vote, 21));
    }

    #[test]
    fn fewer_than_half_of_the_samples_is_weak() {
        // 21 samples: 10 votes backs off, 11 keeps, whatever the others answered or not.
        let mut answers = vec![Some("x"); 10];
        answers.extend(vec![None; 11]);
        let ten = majority(&samples(&answers), 21, 0.7);
        assert_eq!(ten.votes, 10);
        assert!(is_weak(&ten, 21));
        answers[10] = Some("X.");
        let eleven = majority(&samples(&answers), 21, 0.7);
        assert_eq!((eleven.votes, eleven.answer.as_deref()), (11, Some("x")));
        assert!(!is_weak(&eleven, 21));
        // An even N: exactly half keeps.
        let half = majority(&samples(&[Some("a"), Some("a"), Some("b"), None]), 4, 0.7);
        assert!(!is_weak(&half, 4));
    }
}
