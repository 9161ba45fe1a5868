//! `IndexPool`: the few threads a server runs its index searches on. Searches take the CPU (and
//! the disk, when the index is not in the page cache), so they stay off the async workers; a fixed
//! pool rather than tokio's blocking pool, which under steady load grows to hundreds of threads
//! (each with its stack and malloc arena) on a 2-core machine and keeps them busy taking turns.

use std::panic::AssertUnwindSafe;

type Job = Box<dyn FnOnce() + Send>;

/// `threads` threads taking jobs in order from one queue; they end when the pool is dropped.
pub struct IndexPool {
    jobs: crossbeam_channel::Sender<Job>,
}

impl IndexPool {
    pub fn new(threads: usize) -> std::io::Result<IndexPool> {
        let (jobs, queue) = crossbeam_channel::unbounded::<Job>();
        for idx in 0..threads.max(1) {
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

    /// A pool of twice as many threads as the machine has cores: a thread waiting on the disk
    /// leaves the cores to the others.
    pub fn for_this_machine() -> std::io::Result<IndexPool> {
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        IndexPool::new(2 * cores)
    }

    /// Runs `work` on one of the pool's threads; `None` when it panicked.
    pub async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            // A panic ends this job only; the thread goes on to the next.
            if let Ok(value) = std::panic::catch_unwind(AssertUnwindSafe(work)) {
                let _ = done.send(value);
            }
        });
        self.jobs.send(job).ok()?;
        result.await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::{Arc, Mutex};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runs_every_job_on_its_own_few_threads_and_survives_a_panic() {
        let pool = Arc::new(IndexPool::new(3).unwrap());
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
            assert_eq!(job.await.unwrap(), Some(idx * 2));
        }
        assert!(threads.lock().unwrap().len() <= 3);
        let panicked: Option<()> = pool.run(|| panic!("a job that fails")).await;
        assert_eq!(panicked, None);
        assert_eq!(pool.run(|| 7).await, Some(7));
    }
}
