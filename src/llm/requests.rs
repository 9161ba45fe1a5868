//! `counted`: the HTTP requests a piece of work sends the model server — every one the client
//! sends, retries, re-sends without a refused parameter and failed ones included — for a run's
//! `usage.requests`. The client counts each request as it sends it into the count of the
//! [`counted`] future it runs in (a task-local: the agent's calls never leave their task); a
//! request sent outside any is counted nowhere. A model that is no HTTP client of ours (a
//! recording, a program's own `Llm`) counts nothing, and the count is `None`, not zero.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The count of one [`counted`] future.
#[derive(Default)]
struct Tally {
    sent: AtomicU64,
    /// A client that counts its requests was asked (a reply from the cache sends none).
    counting: AtomicBool,
}

tokio::task_local! {
    static TALLY: Arc<Tally>;
}

/// Runs `future`, counting the requests the model client sends while it runs: its output, and
/// how many (`None` when no client that counts them was asked). A `counted` inside another counts
/// its requests for itself only.
pub async fn counted<F: Future>(future: F) -> (F::Output, Option<u64>) {
    let tally = Arc::new(Tally::default());
    let output = TALLY.scope(Arc::clone(&tally), future).await;
    let sent = tally
        .counting
        .load(Ordering::Relaxed)
        .then(|| tally.sent.load(Ordering::Relaxed));
    (output, sent)
}

/// Says that a client that counts its requests was asked, in the [`counted`] future it is asked
/// from, if any: its count is a number from now on, zero until it sends one.
pub(crate) fn counting() {
    let _ = TALLY.try_with(|tally| tally.counting.store(true, Ordering::Relaxed));
}

/// Counts one request about to be sent, in the [`counted`] future it is sent from, if any.
pub(crate) fn count_sent() {
    let _ = TALLY.try_with(|tally| {
        tally.counting.store(true, Ordering::Relaxed);
        tally.sent.fetch_add(1, Ordering::Relaxed);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn requests_are_counted_in_the_future_that_sends_them() {
        let ((), outer) = counted(async {
            count_sent();
            let ((), inner) = counted(async {
                count_sent();
                count_sent();
            })
            .await;
            assert_eq!(inner, Some(2));
            count_sent();
        })
        .await;
        assert_eq!(outer, Some(2), "the inner count is its own");
        count_sent(); // outside any: counted nowhere, and no panic
        let ((), cached) = counted(async { counting() }).await;
        assert_eq!(cached, Some(0), "asked, and answered from the cache");
        let ((), other) = counted(async {}).await;
        assert_eq!(other, None, "no client that counts was asked");
    }
}
