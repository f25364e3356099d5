//! The filesystem's charges, through its host interface on a real directory.

use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemCtxView};
use wasmtime_wasi::p2::bindings::filesystem::preopens;
use wasmtime_wasi::p2::bindings::filesystem::types::{self, ErrorCode, HostDescriptor};
use wasmtime_wasi::p2::FsResult;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

use super::view::{borrow, no_follow, QuotaFsView, StoreDisk};
use crate::budget::disk::{DiskBudget, DIRECTORY_BYTES};
use crate::sandbox::tool_device::StoreDevices;

/// A store's filesystem with a temporary directory at `/`, under a disk budget.
struct Fixture {
    dir: tempfile::TempDir,
    wasi: WasiCtx,
    table: ResourceTable,
    disk: StoreDisk,
    devices: StoreDevices,
    budget: DiskBudget,
}

impl Fixture {
    fn new(bytes: u64, entries: u64) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let mut b = WasiCtxBuilder::new();
        b.allow_blocking_current_thread(true);
        b.preopened_dir(dir.path(), "/", FsPerms::ReadWrite)
            .unwrap();
        let budget = DiskBudget::new(bytes, entries);
        Fixture {
            dir,
            wasi: b.build(),
            table: ResourceTable::new(),
            disk: StoreDisk::new(budget.clone()),
            devices: StoreDevices::default(),
            budget,
        }
    }

    fn view(&mut self) -> QuotaFsView<'_> {
        QuotaFsView {
            inner: WasiFilesystemCtxView {
                ctx: self.wasi.filesystem(),
                table: &mut self.table,
            },
            disk: &mut self.disk,
            devices: &mut self.devices,
        }
    }

    fn root(&mut self) -> Resource<Descriptor> {
        let mut view = self.view();
        let mut dirs = preopens::Host::get_directories(&mut view.inner).unwrap();
        dirs.remove(0).0
    }

    /// The bytes and entries charged.
    fn charged(&self) -> (u64, u64) {
        (self.budget.bytes_used(), self.budget.entries())
    }

    fn exists(&self, path: &str) -> bool {
        self.dir.path().join(path).symlink_metadata().is_ok()
    }
}

/// The error code of a failed call.
fn code(f: &mut Fixture, r: FsResult<()>) -> ErrorCode {
    let err = r.expect_err("the call should fail");
    types::Host::convert_error_code(&mut f.view(), err).unwrap()
}

#[tokio::test]
async fn symlinks_are_charged_their_target_until_the_last_link_goes() {
    let mut f = Fixture::new(10_000, 100);
    let root = f.root();
    let target = "t".repeat(4000);
    let mut v = f.view();
    v.symlink_at(borrow(&root), target.clone(), "a".into())
        .await
        .unwrap();
    v.symlink_at(borrow(&root), target.clone(), "b".into())
        .await
        .unwrap();
    assert_eq!(f.charged(), (8000, 2));

    // Past the cap nothing is created, and nothing stays charged.
    let r = f
        .view()
        .symlink_at(borrow(&root), target.clone(), "c".into())
        .await;
    assert_eq!(code(&mut f, r), ErrorCode::InsufficientSpace);
    assert!(!f.exists("c"));
    assert!(f.budget.was_exceeded());
    assert_eq!(f.charged(), (8000, 2));
    // A creation that fails gives its charge back.
    let r = f
        .view()
        .symlink_at(borrow(&root), "x".into(), "a".into())
        .await;
    assert_eq!(code(&mut f, r), ErrorCode::Exist);
    assert_eq!(f.charged(), (8000, 2));

    // A hard link to a symlink adds a name, not bytes; the bytes come back with the
    // last link.
    let mut v = f.view();
    v.link_at(
        borrow(&root),
        no_follow(),
        "a".into(),
        borrow(&root),
        "h".into(),
    )
    .await
    .unwrap();
    assert!(f
        .dir
        .path()
        .join("h")
        .symlink_metadata()
        .unwrap()
        .is_symlink());
    assert_eq!(f.charged(), (8000, 3));
    f.view()
        .unlink_file_at(borrow(&root), "a".into())
        .await
        .unwrap();
    assert_eq!(f.charged(), (8000, 2));
    f.view()
        .unlink_file_at(borrow(&root), "h".into())
        .await
        .unwrap();
    assert_eq!(f.charged(), (4000, 1));

    // Renaming a symlink keeps its charge; renaming over one refunds that one.
    let mut v = f.view();
    v.symlink_at(borrow(&root), target.clone(), "c".into())
        .await
        .unwrap();
    v.rename_at(borrow(&root), "c".into(), borrow(&root), "d".into())
        .await
        .unwrap();
    assert_eq!(f.charged(), (8000, 2));
    let mut v = f.view();
    v.rename_at(borrow(&root), "d".into(), borrow(&root), "b".into())
        .await
        .unwrap();
    assert_eq!(f.charged(), (4000, 1));
    f.view()
        .unlink_file_at(borrow(&root), "b".into())
        .await
        .unwrap();
    assert_eq!(f.charged(), (0, 0));

    // A symlink the run did not make refunds nothing.
    std::os::unix::fs::symlink(&target, f.dir.path().join("host")).unwrap();
    f.view()
        .symlink_at(borrow(&root), "y".into(), "e".into())
        .await
        .unwrap();
    f.view()
        .unlink_file_at(borrow(&root), "host".into())
        .await
        .unwrap();
    assert_eq!(f.charged().0, 1);
}

/// What the host removes itself (a command's own files, `run/commands.rs`) is given
/// back as the run's own removals are: its key is the one wasmtime-wasi hashes.
#[tokio::test]
async fn the_hosts_removals_give_back_what_the_run_made() {
    let mut f = Fixture::new(10 * DIRECTORY_BYTES, 100);
    let root = f.root();
    for d in ["d", "d/e"] {
        f.view()
            .create_directory_at(borrow(&root), d.into())
            .await
            .unwrap();
    }
    f.view()
        .symlink_at(borrow(&root), "target".into(), "d/link".into())
        .await
        .unwrap();
    assert_eq!(f.charged(), (2 * DIRECTORY_BYTES + 6, 3));
    f.budget.remove_tree(&f.dir.path().join("d")).unwrap();
    assert!(!f.exists("d"));
    assert_eq!(f.charged(), (0, 0));
}

#[tokio::test]
async fn directories_are_charged_a_block_until_removed() {
    let mut f = Fixture::new(3 * DIRECTORY_BYTES + 100, 100);
    let root = f.root();
    let mut v = f.view();
    for d in ["d1", "d2", "d3"] {
        v.create_directory_at(borrow(&root), d.into())
            .await
            .unwrap();
    }
    assert_eq!(f.charged(), (3 * DIRECTORY_BYTES, 3));
    let r = f
        .view()
        .create_directory_at(borrow(&root), "d4".into())
        .await;
    assert_eq!(code(&mut f, r), ErrorCode::InsufficientSpace);
    assert!(!f.exists("d4"));
    assert_eq!(f.charged(), (3 * DIRECTORY_BYTES, 3));
    // A symlink does not fit either.
    let r = f
        .view()
        .symlink_at(borrow(&root), "t".repeat(101), "l".into())
        .await;
    assert_eq!(code(&mut f, r), ErrorCode::InsufficientSpace);
    assert!(!f.exists("l"));

    // Removing gives the block back; a failed removal does not.
    std::fs::write(f.dir.path().join("d1/file"), "x").unwrap();
    let r = f
        .view()
        .remove_directory_at(borrow(&root), "d1".into())
        .await;
    assert_eq!(code(&mut f, r), ErrorCode::NotEmpty);
    assert_eq!(f.charged(), (3 * DIRECTORY_BYTES, 3));
    std::fs::remove_file(f.dir.path().join("d1/file")).unwrap();
    f.view()
        .remove_directory_at(borrow(&root), "d1".into())
        .await
        .unwrap();
    assert_eq!(f.charged(), (2 * DIRECTORY_BYTES, 2));
    f.view()
        .create_directory_at(borrow(&root), "d4".into())
        .await
        .unwrap();
    assert_eq!(f.charged(), (3 * DIRECTORY_BYTES, 3));
    let r = f
        .view()
        .remove_directory_at(borrow(&root), "d1".into())
        .await;
    assert_eq!(code(&mut f, r), ErrorCode::NoEntry);
    assert_eq!(f.charged(), (3 * DIRECTORY_BYTES, 3));

    // Renaming over an empty directory removes it.
    let mut v = f.view();
    v.rename_at(borrow(&root), "d2".into(), borrow(&root), "d3".into())
        .await
        .unwrap();
    assert_eq!(f.charged(), (2 * DIRECTORY_BYTES, 2));
    let mut v = f.view();
    v.remove_directory_at(borrow(&root), "d3".into())
        .await
        .unwrap();
    v.remove_directory_at(borrow(&root), "d4".into())
        .await
        .unwrap();
    assert_eq!(f.charged(), (0, 0));

    // A directory the run did not make refunds nothing.
    std::fs::create_dir(f.dir.path().join("host")).unwrap();
    f.view()
        .create_directory_at(borrow(&root), "d5".into())
        .await
        .unwrap();
    f.view()
        .remove_directory_at(borrow(&root), "host".into())
        .await
        .unwrap();
    assert_eq!(f.charged().0, DIRECTORY_BYTES);
}

/// A stream write lands in the file before `write` returns (no blocking-pool round trip:
/// the stream has room again at once), is charged, and past the cap fails and closes the
/// stream; appends land at the end.
#[tokio::test]
async fn stream_writes_land_at_once_and_are_charged() {
    let mut f = Fixture::new(1000, 10);
    let root = f.root();
    let mut v = f.view();
    let file = v
        .open_at(
            borrow(&root),
            no_follow(),
            "out.txt".into(),
            types::OpenFlags::CREATE,
            types::DescriptorFlags::READ | types::DescriptorFlags::WRITE,
        )
        .await
        .unwrap();
    let at_start = v.write_via_stream(borrow(&file), 0).unwrap();
    let appends = v.append_via_stream(borrow(&file)).unwrap();
    let stream = f.table.get_mut(&at_start).unwrap();
    let room = stream.check_write().unwrap();
    stream.write(bytes::Bytes::from_static(b"hello ")).unwrap();
    assert_eq!(stream.check_write().unwrap(), room, "the write is done");
    assert_eq!(
        std::fs::read(f.dir.path().join("out.txt")).unwrap(),
        b"hello "
    );
    let stream = f.table.get_mut(&appends).unwrap();
    stream.write(bytes::Bytes::from_static(b"world")).unwrap();
    assert_eq!(
        std::fs::read(f.dir.path().join("out.txt")).unwrap(),
        b"hello world"
    );
    assert_eq!(f.charged(), (11, 1));

    // Past the cap: refused, nothing written, and the stream is closed.
    let stream = f.table.get_mut(&appends).unwrap();
    let err = stream
        .write(bytes::Bytes::from(vec![b'x'; 2000]))
        .unwrap_err();
    assert!(
        matches!(&err, wasmtime_wasi::p2::StreamError::LastOperationFailed(e)
            if e.downcast_ref::<crate::budget::disk::DiskFull>().is_some()),
        "{err}"
    );
    assert_eq!(
        std::fs::metadata(f.dir.path().join("out.txt"))
            .unwrap()
            .len(),
        11
    );
    assert_eq!(f.charged(), (11, 1));
}
