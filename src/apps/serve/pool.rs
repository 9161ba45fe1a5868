//! `IndexPool`: the few threads a server runs its index searches on. Searches take the CPU (and
//! the disk, when the index is not in the page cache), so they stay off the async workers; a fixed
//! pool rather than tokio's blocking pool, which under steady load grows to hundreds of threads
//! (each with its stack and malloc arena) on a 2-core machine and keeps them busy taking turns.
//!
//! Its queue is bounded: a job that finds it full is refused at once ([`PoolError::Busy`], a 503
//! to the client), and a job whose caller stopped waiting (its client timed out or hung up) is
//! skipped when its turn comes.

use std::panic::AssertUnwindSafe;

type Job = Box<dyn FnOnce() + Send>;

/// How many threads, and how many jobs may wait for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSize {
    pub threads: usize,
    pub queue: usize,
}

impl PoolSize {
    /// Twice as many threads as the machine has cores (a thread waiting on the disk leaves the
    /// cores to the others), and 64 waiting jobs a thread: a few milliseconds of searches each.
    pub fn for_this_machine() -> PoolSize {
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        PoolSize {
            threads: 2 * cores,
            queue: 2 * cores * 64,
        }
    }
}

/// Why a job gave no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    #[error("the server is busy: too many searches are waiting; retry shortly")]
    Busy,
    #[error("the search's worker failed")]
    Failed,
}

/// `threads` threads taking jobs in order from one bounded queue; they end when the pool is
/// dropped.
pub struct IndexPool {
    jobs: crossbeam_channel::Sender<Job>,
}

impl IndexPool {
    pub fn new(size: PoolSize) -> std::io::Result<IndexPool> {
        let (jobs, queue) = crossbeam_channel::bounded::<Job>(size.queue.max(1));
        for idx in 0..size.threads.max(1) {
            let queue = queue.clone();
            std::thread::Builder::new()
                .name(format!("serve-index-{idx}"))
                .spawn(move || {
                    for job in queue {
                        job();
                    }
                })?;
        }
        Ok(IndexPool { jobs })
    }

    /// Runs `work` on one of the pool's threads, unless the caller stopped waiting before its
    /// turn came: [`PoolError::Busy`] when the queue is full, [`PoolError::Failed`] when it
    /// panicked.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, PoolError> {
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            // The future that waited for this job was dropped: nobody reads what it would give.
            if done.is_closed() {
                return;
            }
            // A panic ends this job only; the thread goes on to the next.
            if let Ok(value) = std::panic::catch_unwind(AssertUnwindSafe(work)) {
                let _ = done.send(value);
            }
        });
        self.jobs.try_send(job).map_err(|error| match error {
            crossbeam_channel::TrySendError::Full(_) => PoolError::Busy,
            crossbeam_channel::TrySendError::Disconnected(_) => PoolError::Failed,
        })?;
        result.await.map_err(|_| PoolError::Failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::{Arc, Mutex};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runs_every_job_on_its_own_few_threads_and_survives_a_panic() {
        let pool = Arc::new(
            IndexPool::new(PoolSize {
                threads: 3,
                queue: 256,
            })
            .unwrap(),
        );
        let threads = Arc::new(Mutex::new(HashSet::new()));
        let jobs: Vec<_> = (0..200)
            .map(|idx| {
                let (pool, threads) = (pool.clone(), threads.clone());
                tokio::spawn(async move {
                    pool.run(move || {
                        threads.lock().unwrap().insert(std::thread::current().id());
                        std::thread::sleep(std::time::Duration::from_micros(200));
                        idx * 2
                    })
                    .await
                })
            })
            .collect();
        for (idx, job) in jobs.into_iter().enumerate() {
            assert_eq!(job.await.unwrap(), Ok(idx * 2));
        }
        assert!(threads.lock().unwrap().len() <= 3);
        let panicked: Result<(), PoolError> = pool.run(|| panic!("a job that fails")).await;
        assert_eq!(panicked, Err(PoolError::Failed));
        assert_eq!(pool.run(|| 7).await, Ok(7));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_queue_refuses_and_an_abandoned_job_is_skipped() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let pool = Arc::new(IndexPool::new(PoolSize { threads: 1, queue: 2 }).unwrap());
        // The one thread held until `release`, and known to be held.
        let (started, mut is_started) = tokio::sync::mpsc::channel::<()>(1);
        let (release, released) = std::sync::mpsc::channel::<()>();
        let holding = tokio::spawn({
            let pool = pool.clone();
            async move {
                pool.run(move || {
                    started.blocking_send(()).unwrap();
                    released.recv().unwrap();
                })
                .await
            }
        });
        is_started.recv().await.unwrap();
        // Two jobs wait; their callers stop waiting (as a request timed out or a client left).
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..2 {
            let ran = ran.clone();
            let waiting = pool.run(move || ran.fetch_add(1, Ordering::SeqCst));
            let gave_up = tokio::time::timeout(std::time::Duration::from_millis(20), waiting).await;
            assert!(gave_up.is_err(), "a queued job ran while the thread was held");
        }
        // The queue is full: the next job is refused at once.
        assert_eq!(pool.run(|| 1).await, Err(PoolError::Busy));
        release.send(()).unwrap();
        assert_eq!(holding.await.unwrap(), Ok(()));
        // The abandoned jobs are skipped (the queue is full until the thread has taken them).
        let next = loop {
            match pool.run(|| 2).await {
                Err(PoolError::Busy) => tokio::task::yield_now().await,
                other => break other,
            }
        };
        assert_eq!(next, Ok(2));
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    }
}
