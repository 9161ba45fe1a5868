//! `merge`: the shards of one evaluation ([`crate::record::evaluation::read_evaluation`]) written as one results file.

use std::path::Path;

use crate::base::fsutil::atomic_write;
use crate::record::evaluation::{Evaluation, EvaluationError};
use crate::record::results::ResultsError;

/// Writes the evaluation's runs as one results file (JSON Lines, in the evaluation's order), each
/// line the bytes it was read from ([`RecordedRun::results_line`]: fields this version does not
/// know survive), durably ([`atomic_write`]): a crash leaves the old file or the new one, whole.
pub fn write_results(evaluation: &Evaluation, out: &Path) -> Result<(), EvaluationError> {
    let mut bytes = Vec::new();
    for evaluated in &evaluation.runs {
        bytes.extend(evaluated.results_line());
    }
    atomic_write(out, &bytes).map_err(|source| ResultsError::Write {
        path: out.to_owned(),
        source,
    })?;
    crate::base::fsutil::remove_stale_temporaries(out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::evaluation::read_evaluation;
    use std::path::PathBuf;

    #[test]
    fn merged_lines_are_the_bytes_they_were_read_from() {
        let dir = tempfile::tempdir().unwrap();
        let lines = [
            "{ \"id\": \"a\", \"question\": \"q\", \"steps\": [], \"reviewer_note\": \"mine\", \"usage\": {\"llm_calls\": 1, \"cache_read_tokens\": 7}}",
            "{\"id\":\"b\",\"question\":\"q\",\"steps\":[],\"answer\":\"x\",  \"newer\": [1, 2]}",
        ];
        let paths: Vec<PathBuf> = lines
            .iter()
            .enumerate()
            .map(|(idx, line)| {
                let path = dir.path().join(format!("shard-{idx}.jsonl"));
                std::fs::write(&path, format!("{line}\n")).unwrap();
                path
            })
            .collect();
        let out = dir.path().join("merged.jsonl");
        write_results(&read_evaluation(&paths).unwrap(), &out).unwrap();
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            format!("{}\n{}\n", lines[0], lines[1])
        );
    }
}
