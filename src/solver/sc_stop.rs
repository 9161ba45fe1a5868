//! CoT-SC's stopping rules (`--sc-stop`): whether the samples asked so far decide the vote, so
//! that the rest of the N need not be asked.
//!
//! `exact` stops once no way the samples not yet asked could answer changes the majority of all
//! N (ties broken as [`super::vote::majority`] breaks them) — nor, for `cot-sc-then-react`, the
//! backoff's verdict on it (whether it holds at least half of all N): its answer and its backoff
//! are always those of all N. `beta` is Adaptive-Consistency's rule (Aggarwal et al., EMNLP
//! 2023), which stops once the leader is ahead of the runner-up with the confidence asked; it may
//! rarely pick another answer than all N would, and the backoff judges its vote on the samples
//! asked ([`verdict_over`]).

use crate::base::method::{ScStop, StopRule};
use crate::record::run::{Sample, ScStopReason, ScStopRecord, Vote};

use super::vote::{Candidate, leader, tally};

/// What the samples not yet asked must not be able to change when `exact` stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// The majority (CoT-SC alone, and `react-then-cot-sc`'s second phase).
    Majority,
    /// The majority and whether it holds at least half of all N: `cot-sc-then-react`'s verdict.
    MajorityAndBackoff,
}

/// Why sampling stops after `samples` of `n_samples`, or `None` to ask more.
pub fn decide(stop: &ScStop, samples: &[Sample], n_samples: usize, settle: Settle) -> Option<ScStopReason> {
    if samples.len() >= n_samples {
        return Some(ScStopReason::AllAsked);
    }
    let tally = tally(samples);
    let remaining = n_samples - samples.len();
    match stop.rule {
        StopRule::Exact => (cannot_be_overtaken(&tally, remaining)
            && (settle == Settle::Majority || verdict_is_settled(&tally, remaining, n_samples)))
        .then_some(ScStopReason::Decided),
        StopRule::Beta => {
            let (leading, runner_up) = two_most_voted(&tally);
            (leading > 0 && leader_probability(leading, runner_up) >= stop.confidence)
                .then_some(ScStopReason::Confident)
        }
    }
}

/// Whether the leader of `tally` wins the vote whatever the `remaining` samples answer. The
/// worst for it is every remaining sample giving one other answer and none its own: that answer
/// must then still have fewer votes, or as many and have been sampled after the leader (a tie
/// goes to the answer sampled first). An answer not yet given would be sampled after the leader.
pub fn cannot_be_overtaken(tally: &[Candidate], remaining: usize) -> bool {
    let Some(leading) = leader(tally) else {
        return remaining == 0;
    };
    let beaten_by = |rival: &Candidate| {
        let most = rival.votes + remaining;
        most > leading.votes || (most == leading.votes && rival.first < leading.first)
    };
    let new_answer = Candidate {
        votes: 0,
        first: usize::MAX,
    };
    !tally
        .iter()
        .filter(|rival| rival.first != leading.first)
        .chain([&new_answer])
        .any(beaten_by)
}

/// Whether the leader of `tally`, which cannot be overtaken, holds at least half of all
/// `n_samples` whatever the `remaining` samples answer: it does already, or it would not even
/// with every one of them.
fn verdict_is_settled(tally: &[Candidate], remaining: usize, n_samples: usize) -> bool {
    let votes = leader(tally).map_or(0, |leading| leading.votes);
    2 * votes >= n_samples || 2 * (votes + remaining) < n_samples
}

/// The samples `cot-sc-then-react` judges its vote over ([`super::vote::is_weak`]): all N, also
/// where `exact` stopped early (it stops only once the verdict over all N is settled) — but the
/// samples asked where `beta` stopped early: its vote may keep where all N would back off, or
/// back off where they would keep.
pub fn verdict_over(vote: &Vote, record: Option<&ScStopRecord>) -> usize {
    match record {
        Some(record) if record.stop.rule == StopRule::Exact => record.samples,
        _ => vote.samples,
    }
}

/// The votes of the most voted answer and of the runner-up (0 when there is none).
fn two_most_voted(tally: &[Candidate]) -> (usize, usize) {
    let mut votes: Vec<usize> = tally.iter().map(|candidate| candidate.votes).collect();
    votes.sort_unstable_by(|a, b| b.cmp(a));
    (
        votes.first().copied().unwrap_or(0),
        votes.get(1).copied().unwrap_or(0),
    )
}

/// Adaptive-Consistency's posterior that the leader is the more likely answer of the two: with
/// `leading` and `runner_up` votes, P(p > 1/2) for p ~ Beta(leading + 1, runner_up + 1) — the
/// integral of x^a (1 − x)^b over [1/2, 1] divided by that over [0, 1].
///
/// For integer parameters the Beta CDF is a binomial tail, I_x(α, β) = P(Binomial(α + β − 1, x)
/// ≥ α), so with n = a + b + 1 the probability is the finite sum Σ_{k=0}^{a} C(n, k) / 2^n,
/// computed term by term in logarithms so that large N neither overflows nor underflows.
pub fn leader_probability(leading: usize, runner_up: usize) -> f64 {
    let n = (leading + runner_up + 1) as f64;
    let half_to_n = -n * std::f64::consts::LN_2;
    let mut ln_choose = 0.0; // ln C(n, 0)
    let mut sum = 0.0;
    for k in 0..=leading {
        sum += (ln_choose + half_to_n).exp();
        ln_choose += ((n - k as f64) / (k as f64 + 1.0)).ln();
    }
    sum.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::metrics::normalize_answer;
    use crate::base::rng::SplitMix64;
    use crate::solver::vote::{is_weak, majority, samples};

    fn winner(answers: &[Option<&str>], n_samples: usize) -> Option<String> {
        majority(&samples(answers), n_samples, 0.7)
            .answer
            .map(|answer| normalize_answer(&answer))
    }

    const EXACT: ScStop = ScStop {
        rule: StopRule::Exact,
        batch: 1,
        confidence: 0.95,
    };

    /// Every sequence of 6 samples over three answers and no answer: wherever `exact` stops, the
    /// prefix's winner is the winner of every way the sequence could go on (sound) — and with
    /// `MajorityAndBackoff`, so is the backoff's verdict over all 6; wherever it asks more, some
    /// way of going on changes what it settles (it stops as soon as it can).
    #[test]
    fn exact_stops_exactly_when_no_remaining_samples_could_change_the_winner() {
        const N: usize = 6;
        let alphabet = [Some("x"), Some("y"), Some("z"), None];
        let sequences = |len: usize| -> Vec<Vec<Option<&str>>> {
            (0..alphabet.len().pow(len as u32))
                .map(|mut code| {
                    (0..len)
                        .map(|_| {
                            let answer = alphabet[code % alphabet.len()];
                            code /= alphabet.len();
                            answer
                        })
                        .collect()
                })
                .collect()
        };
        // What all N settle: the winner, and with the backoff whether it is weak over N.
        let outcome = |answers: &[Option<&str>], settle: Settle| {
            let vote = majority(&samples(answers), N, 0.7);
            let weak = (settle == Settle::MajorityAndBackoff).then(|| is_weak(&vote, N));
            (vote.answer.map(|answer| normalize_answer(&answer)), weak)
        };
        for settle in [Settle::Majority, Settle::MajorityAndBackoff] {
            let mut stopped_early = 0;
            for asked in 0..N {
                let continuations = sequences(N - asked);
                for prefix in sequences(asked) {
                    let stops = decide(&EXACT, &samples(&prefix), N, settle).is_some();
                    let outcomes: std::collections::HashSet<_> = continuations
                        .iter()
                        .map(|rest| {
                            let whole: Vec<Option<&str>> = prefix.iter().chain(rest).copied().collect();
                            outcome(&whole, settle)
                        })
                        .collect();
                    assert_eq!(stops, outcomes.len() == 1, "{prefix:?} of {N}, {settle:?}");
                    if stops {
                        // The prefix's own winner is the one all N give.
                        let (winner, _) = outcome(&prefix, Settle::Majority);
                        assert!(outcomes.iter().all(|(all_n, _)| *all_n == winner), "{prefix:?}");
                    }
                    stopped_early += usize::from(stops);
                }
            }
            assert!(stopped_early > 100, "{settle:?}: {stopped_early}");
        }
    }

    /// Issue 45's case: `x a b c d e f g h` then twelve `x` of 21. At 15 samples `x` (7) cannot
    /// be overtaken, but 7 of 21 would back off and 13 would not: `exact` waits for the
    /// verdict, which 11 votes settle at 19.
    #[test]
    fn exact_waits_for_the_backoff_verdict_of_all_n() {
        let mut answers = vec![Some("x"), Some("a"), Some("b"), Some("c"), Some("d")];
        answers.extend([Some("e"), Some("f"), Some("g"), Some("h")]);
        answers.extend([Some("x"); 12]);
        let at = |asked: usize, settle| decide(&EXACT, &samples(&answers[..asked]), 21, settle);
        assert_eq!(at(15, Settle::Majority), Some(ScStopReason::Decided));
        assert_eq!(at(15, Settle::MajorityAndBackoff), None);
        assert_eq!(at(18, Settle::MajorityAndBackoff), None);
        assert_eq!(at(19, Settle::MajorityAndBackoff), Some(ScStopReason::Decided));
        // A weak verdict settles too: every sample a new answer is weak over 21 once even the
        // rest all agreeing could not reach 11 votes.
        let scattered: Vec<Option<String>> = (0..21).map(|idx| Some(format!("a{idx}"))).collect();
        let scattered: Vec<Option<&str>> = scattered.iter().map(Option::as_deref).collect();
        let first_stop = (1..=21).find(|&asked| {
            decide(
                &EXACT,
                &samples(&scattered[..asked]),
                21,
                Settle::MajorityAndBackoff,
            )
            .is_some()
        });
        assert_eq!(
            first_stop,
            Some(21),
            "a new answer could still win a tie: all are asked"
        );
        // Five `x` and eleven unanswered: six more could not overtake `x` (a tie goes to it) nor
        // bring it to 11 — weak over 21, settled at 16; at 15, a new answer could still win.
        let mut weak = vec![Some("x"); 5];
        weak.extend([None; 11]);
        let at = |asked: usize| decide(&EXACT, &samples(&weak[..asked]), 21, Settle::MajorityAndBackoff);
        assert_eq!((at(15), at(16)), (None, Some(ScStopReason::Decided)));
        let vote = majority(&samples(&weak), 16, 0.7);
        assert!(is_weak(&vote, 21));
    }

    #[test]
    fn exact_asks_more_when_a_tie_with_an_earlier_answer_could_change_the_winner() {
        // `y` leads 2 to 1 with one sample to come: a last `x` ties, and the tie goes to `x`,
        // sampled first.
        let tied_earlier = [Some("x"), Some("y"), Some("y")];
        assert_eq!(decide(&EXACT, &samples(&tied_earlier), 4, Settle::Majority), None);
        let mut whole = tied_earlier.to_vec();
        whole.push(Some("x"));
        assert_eq!(winner(&whole, 4).as_deref(), Some("x"));
        // Sampled the other way round, a tie keeps `y`: decided.
        let tied_later = [Some("y"), Some("y"), Some("x")];
        assert_eq!(
            decide(&EXACT, &samples(&tied_later), 4, Settle::Majority),
            Some(ScStopReason::Decided)
        );
        // A new answer would come after the leader: two votes with two to come is decided...
        assert_eq!(
            decide(&EXACT, &samples(&[Some("y"), Some("y")]), 4, Settle::Majority),
            Some(ScStopReason::Decided)
        );
        // ... with three to come, not; and nothing answered yet decides nothing.
        assert_eq!(
            decide(&EXACT, &samples(&[Some("y"), Some("y")]), 5, Settle::Majority),
            None
        );
        assert_eq!(
            decide(&EXACT, &samples(&[None, None, None]), 4, Settle::Majority),
            None
        );
        assert_eq!(
            decide(&EXACT, &samples(&[None, None, None, None]), 4, Settle::Majority),
            Some(ScStopReason::AllAsked)
        );
    }

    /// The closed form against the integral it stands for (Simpson's rule), and a few values
    /// by hand: 4 to 0 is 31/32, a tie is 1/2.
    #[test]
    fn the_beta_probability_is_the_integral_of_the_posterior() {
        let integral = |a: i32, b: i32, from: f64, to: f64| {
            let intervals = 2000;
            let h = (to - from) / f64::from(intervals);
            let f = |x: f64| x.powi(a) * (1.0 - x).powi(b);
            let mut sum = f(from) + f(to);
            for idx in 1..intervals {
                let weight = if idx % 2 == 1 { 4.0 } else { 2.0 };
                sum += weight * f(from + f64::from(idx) * h);
            }
            sum * h / 3.0
        };
        for a in 0..15 {
            for b in 0..15 {
                let by_integral = integral(a, b, 0.5, 1.0) / integral(a, b, 0.0, 1.0);
                let closed = leader_probability(a as usize, b as usize);
                assert!(
                    (closed - by_integral).abs() < 1e-9,
                    "{a} {b}: {closed} {by_integral}"
                );
            }
        }
        for (leading, runner_up, probability) in [
            (4, 0, 31.0 / 32.0),
            (3, 3, 0.5),
            (0, 0, 0.5),
            (6, 1, 247.0 / 256.0),
        ] {
            assert!((leader_probability(leading, runner_up) - probability).abs() < 1e-12);
        }
        // Large N: no overflow, and the tail is what symmetry says.
        assert!((leader_probability(600, 600) - 0.5).abs() < 1e-12);
        assert!(leader_probability(3000, 100) > 0.999_999);
    }

    #[test]
    fn beta_stops_at_its_confidence() {
        let beta = |confidence| ScStop {
            rule: StopRule::Beta,
            batch: 5,
            confidence,
        };
        let four = samples(&[Some("a"); 4]);
        // 31/32 = 0.969: confident at 0.95, not at 0.99.
        assert_eq!(
            decide(&beta(0.95), &four, 21, Settle::Majority),
            Some(ScStopReason::Confident)
        );
        assert_eq!(decide(&beta(0.99), &four, 21, Settle::Majority), None);
        // 5 to 1 is 0.9375; 6 to 1 is 0.965. The unanswered do not count.
        let mut answers = vec![Some("a"); 5];
        answers.extend([Some("b"), None, None]);
        assert_eq!(
            decide(&beta(0.95), &samples(&answers), 21, Settle::Majority),
            None
        );
        answers.push(Some("a"));
        assert_eq!(
            decide(&beta(0.95), &samples(&answers), 21, Settle::Majority),
            Some(ScStopReason::Confident)
        );
    }

    /// A number in `0..n` drawn as these samples were scripted: the next word modulo `n`.
    fn below(rng: &mut SplitMix64, n: usize) -> usize {
        (rng.next_u64() % n as u64) as usize
    }

    /// 100 questions of 21 samples: question i's leader holds round(21 · (0.4 + 0.6 i / 99)) of
    /// them (40% to 100%), every other sample a different wrong answer, shuffled.
    fn questions() -> Vec<Vec<Option<String>>> {
        let mut rng = SplitMix64(42);
        (0..100)
            .map(|idx| {
                let rate = 0.4 + 0.6 * f64::from(idx) / 99.0;
                let agreeing = (21.0 * rate).round() as usize;
                let mut answers: Vec<Option<String>> = (0..21)
                    .map(|sample| {
                        Some(if sample < agreeing {
                            "leader".to_owned()
                        } else {
                            format!("wrong {sample}")
                        })
                    })
                    .collect();
                for place in (1..answers.len()).rev() {
                    answers.swap(place, below(&mut rng, place + 1));
                }
                answers
            })
            .collect()
    }

    /// The samples a rule asks of `answers`, `batch` at a time, and the winner it gives.
    fn simulate(stop: &ScStop, answers: &[Option<String>]) -> (usize, Option<String>) {
        let all: Vec<Sample> = answers
            .iter()
            .map(|answer| Sample {
                completion: String::new(),
                answer: answer.clone(),
                request: 1,
                reasoning: None,
            })
            .collect();
        let mut asked = 0;
        loop {
            asked = (asked + stop.batch).min(all.len());
            if decide(stop, &all[..asked], all.len(), Settle::Majority).is_some() {
                return (asked, majority(&all[..asked], asked, 0.7).answer);
            }
        }
    }

    /// The figures docs/methods.md gives: for batches of 1 to 5, `exact` always agrees with all
    /// 21 asking 64–75% of them; `beta` agrees on at least 98 of 100 asking 38–48%.
    #[test]
    fn on_100_questions_exact_always_agrees_and_beta_asks_half_or_less() {
        let questions = questions();
        for batch in 1..=5 {
            for (rule, least_agreeing, most_share) in
                [(StopRule::Exact, 100, 0.85), (StopRule::Beta, 98, 0.50)]
            {
                let stop = ScStop {
                    rule,
                    batch,
                    confidence: 0.95,
                };
                let mut asked = 0;
                let mut agreeing = 0;
                for answers in &questions {
                    let (n_asked, answer) = simulate(&stop, answers);
                    let (_, all_21) = simulate(&ScStop { batch: 21, ..stop }, answers);
                    asked += n_asked;
                    agreeing += usize::from(answer == all_21);
                }
                let share = asked as f64 / (21.0 * 100.0);
                assert!(
                    agreeing >= least_agreeing && share <= most_share,
                    "{rule} batch {batch}: {agreeing} agree, {share:.3} asked"
                );
            }
        }
    }
}
