//! `ReadOnlyDirectory`: a finished index opened without writing a byte — no lock file, no
//! bookkeeping — so that any user who may read it opens it, from a read-only file system too,
//! and a whole job array opens it at once.
//!
//! Tantivy's reader takes `.tantivy-meta.lock` while it opens the segments, so that a writer's
//! garbage collection in the same directory cannot delete them meanwhile; the memory-mapped
//! directory takes it by opening the file for writing. A finished index never has a writer:
//! `index build` writes into a staging directory and swaps whole directories, so there is
//! nothing to lock against, and every write is refused here.

use std::io;
use std::path::Path;
use std::sync::Arc;

use tantivy::directory::error::{DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr,
};

/// An index directory, memory-mapped, that is only ever read.
#[derive(Debug, Clone)]
pub(super) struct ReadOnlyDirectory {
    mmap: MmapDirectory,
}

impl ReadOnlyDirectory {
    pub(super) fn open(dir: &Path) -> Result<ReadOnlyDirectory, OpenDirectoryError> {
        Ok(ReadOnlyDirectory {
            mmap: MmapDirectory::open(dir)?,
        })
    }
}

/// The error every write gets.
fn read_only() -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        "an index is opened read-only: build it again to change it",
    )
}

impl Directory for ReadOnlyDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.mmap.get_file_handle(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.mmap.exists(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.mmap.atomic_read(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        Err(DeleteError::IoError {
            io_error: Arc::new(read_only()),
            filepath: path.to_owned(),
        })
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        Err(OpenWriteError::wrap_io_error(read_only(), path.to_owned()))
    }

    fn atomic_write(&self, _path: &Path, _data: &[u8]) -> io::Result<()> {
        Err(read_only())
    }

    /// Nothing was written: nothing to make durable.
    fn sync_directory(&self) -> io::Result<()> {
        Ok(())
    }

    /// No writer works in a finished index: the lock guards against nothing, and taking it
    /// would write (see the module's documentation).
    fn acquire_lock(&self, _lock: &Lock) -> Result<DirectoryLock, LockError> {
        Ok(DirectoryLock::from(Box::new(())))
    }

    /// A finished index never changes: there are no commits to watch for.
    fn watch(&self, _watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        Ok(WatchHandle::empty())
    }
}
