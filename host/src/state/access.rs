//! The host's side of a component's state accessors (`componentize/state_access.rs`):
//! taking an [`InstanceImage`] out of an instance at rest, and writing one into a fresh
//! instance of the same component.

use wasmtime::component::{Component, ComponentExportIndex, Instance, WasmList};
use wasmtime::Store;

use super::image::{ImageTail, InstanceImage, MemoryImage, Startup};
use super::tail::{Placement, Tail};
use super::written::{page_size, written_pages};
use crate::componentize::state_access::STATE_INSTANCE;

/// A wasm page.
const WASM_PAGE: usize = 1 << 16;

/// Why an image could not be taken or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("the image has {image} memories and {image_globals} globals, the instance {memories} and {globals}")]
    Shape {
        image: usize,
        image_globals: usize,
        memories: usize,
        globals: usize,
    },
    #[error("memory {memory} of the fresh instance is {now} pages, past the image's {image}: its start-up differed")]
    Larger { memory: usize, now: u32, image: u32 },
    #[error(
        "memory {memory} cannot grow to the image's {pages} pages (the session's memory limit)"
    )]
    Grow { memory: usize, pages: u32 },
    #[error("a run of the image lies outside memory {memory}")]
    Outside { memory: usize },
    #[error("its runtime's component has no doors to its state")]
    NoDoors,
    #[error("its interpreter runs as a program waiting for input, not in turns at rest: its runtime's sessions are replayed, not copied")]
    NotAtRest,
    #[error("{part}: {error}")]
    In {
        part: &'static str,
        error: Box<StateError>,
    },
    #[error("the fresh session started {fresh} resident programs, the image holds {image}")]
    Residents { fresh: usize, image: usize },
    #[error("the instance's state accessors failed: {0}")]
    Call(String),
    #[error("it holds {extra} more host resources than when it started (an open file or stream), which a copy cannot carry")]
    Holds { extra: usize },
    #[error("the fresh instance started differently from the one the image was taken of ({fresh:?}, not {image:?})")]
    StartupDiffers { fresh: Startup, image: Startup },
}

fn call_error(e: wasmtime::Error) -> StateError {
    StateError::Call(format!("{e:#}"))
}

/// What the host keeps of an instance's state beside the instance: what it was right
/// after its start-up, where each memory lies then, and the tail ([`Tail`]) of each
/// memory that has one.
#[derive(Debug)]
pub struct LiveState {
    pub startup: Startup,
    places: Vec<Option<Placement>>,
    tails: Vec<Option<Tail>>,
}

impl LiveState {
    /// Where each memory (that holds anything) lay right after start-up.
    pub fn placements(&self) -> impl Iterator<Item = Placement> + '_ {
        self.places.iter().flatten().copied()
    }
}

/// How an image is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taking {
    /// Every changed byte, to be stored.
    Whole,
    /// For copies made now, in memory: memory tails are frozen and shared, and only what
    /// the instance wrote since its tails froze is copied.
    ForCopies,
}

/// The accessors of one memory.
struct MemoryDoors {
    size: ComponentExportIndex,
    view: ComponentExportIndex,
    grow: ComponentExportIndex,
    seek: ComponentExportIndex,
    write: ComponentExportIndex,
}

/// The accessors of one global.
struct GlobalDoors {
    get: ComponentExportIndex,
    set: ComponentExportIndex,
}

/// A component's state accessors, found once per compiled component.
pub struct StateAccess {
    memories: Vec<MemoryDoors>,
    globals: Vec<GlobalDoors>,
}

impl StateError {
    /// The error, said of `part` (the plugin, its interpreter).
    pub fn of(self, part: &'static str) -> StateError {
        StateError::In {
            part,
            error: Box::new(self),
        }
    }
}

impl StateAccess {
    /// The accessors of `component`, if it has them.
    pub fn of(component: &Component) -> Option<StateAccess> {
        let instance = component.get_export_index(None, STATE_INSTANCE)?;
        let find = |name: String| component.get_export_index(Some(&instance), name.as_str());
        let mut memories = Vec::new();
        while let Some(size) = find(format!("memory{}-size", memories.len())) {
            let n = memories.len();
            memories.push(MemoryDoors {
                size,
                view: find(format!("memory{n}-view"))?,
                grow: find(format!("memory{n}-grow"))?,
                seek: find(format!("memory{n}-seek"))?,
                write: find(format!("memory{n}-write"))?,
            });
        }
        let mut globals = Vec::new();
        while let Some(get) = find(format!("global{}-get", globals.len())) {
            let n = globals.len();
            globals.push(GlobalDoors {
                get,
                set: find(format!("global{n}-set"))?,
            });
        }
        Some(StateAccess { memories, globals })
    }

    /// What `instance` is now, holding `resources` host resources: right after its
    /// start-up, what its images are taken against.
    pub async fn startup<T: Send + 'static>(
        &self,
        store: &mut Store<T>,
        instance: &Instance,
        resources: usize,
    ) -> Result<LiveState, StateError> {
        quiet(store, async |store| {
            let pages = self.sizes(store, instance).await?;
            let mut tails = Vec::with_capacity(pages.len());
            let mut places = Vec::with_capacity(pages.len());
            for (m, &size) in pages.iter().enumerate() {
                let from = size as usize * WASM_PAGE;
                let place = self.placement(store, instance, m, from).await?;
                let tail = match place {
                    Some(at) => Tail::attach(at)
                        .inspect_err(|e| tracing::debug!("memory {m} keeps no tail: {e}"))
                        .ok(),
                    None => None,
                };
                tails.push(tail);
                places.push(place);
            }
            Ok(LiveState {
                startup: Startup { pages, resources },
                places,
                tails,
            })
        })
        .await
    }

    /// Memory `m` of `instance`, lent whole as a list (the guest's memory in place).
    async fn view<T: Send + 'static>(
        &self,
        store: &mut Store<T>,
        instance: &Instance,
        m: usize,
    ) -> Result<WasmList<u8>, StateError> {
        let view = instance
            .get_typed_func::<(), (WasmList<u8>,)>(&mut *store, &self.memories[m].view)
            .map_err(call_error)?;
        Ok(view
            .call_async(&mut *store, ())
            .await
            .map_err(call_error)?
            .0)
    }

    /// Where memory `m` of `instance` lies, its tail from `from` (None while it is
    /// empty: an empty list tells no address).
    async fn placement<T: Send + 'static>(
        &self,
        store: &mut Store<T>,
        instance: &Instance,
        m: usize,
        from: usize,
    ) -> Result<Option<Placement>, StateError> {
        let list = self.view(store, instance, m).await?;
        let bytes = list.as_le_slice(&*store);
        Ok((!bytes.is_empty()).then_some(Placement {
            base: bytes.as_ptr() as usize,
            from,
            size: bytes.len(),
        }))
    }

    async fn sizes<T: Send + 'static>(
        &self,
        store: &mut Store<T>,
        instance: &Instance,
    ) -> Result<Vec<u32>, StateError> {
        let mut sizes = Vec::with_capacity(self.memories.len());
        for doors in &self.memories {
            let size = instance
                .get_typed_func::<(), (u32,)>(&mut *store, &doors.size)
                .map_err(call_error)?;
            sizes.push(
                size.call_async(&mut *store, ())
                    .await
                    .map_err(call_error)?
                    .0,
            );
        }
        Ok(sizes)
    }

    /// The state of `instance`, which is at rest (no call of it under way) and holds
    /// `resources` host resources, against its `live` state.
    pub async fn capture<T: Send + 'static>(
        &self,
        store: &mut Store<T>,
        instance: &Instance,
        live: &mut LiveState,
        resources: usize,
        taking: Taking,
    ) -> Result<InstanceImage, StateError> {
        if resources != live.startup.resources {
            return Err(StateError::Holds {
                extra: resources.saturating_sub(live.startup.resources),
            });
        }
        quiet(store, async |store| {
            self.capture_quietly(store, instance, live, taking).await
        })
        .await
    }

    async fn capture_quietly<T: Send + 'static>(
        &self,
        store: &mut Store<T>,
        instance: &Instance,
        live: &mut LiveState,
        taking: Taking,
    ) -> Result<InstanceImage, StateError> {
        let mut image = InstanceImage {
            startup: live.startup.clone(),
            ..InstanceImage::default()
        };
        let sizes = self.sizes(store, instance).await?;
        for (m, &size) in sizes.iter().enumerate() {
            let from = live.startup.pages.get(m).copied().unwrap_or(0) as usize * WASM_PAGE;
            let mut memory = MemoryImage {
                pages: size,
                ..MemoryImage::default()
            };
            if size > 0 {
                let list = self.view(store, instance, m).await?;
                let bytes = list.as_le_slice(&*store);
                let from = from.min(bytes.len());
                let tail = live.tails.get_mut(m).and_then(Option::as_mut);
                let high = match (tail, taking) {
                    (Some(tail), Taking::ForCopies) => {
                        let at = Placement {
                            base: bytes.as_ptr() as usize,
                            from,
                            size: bytes.len(),
                        };
                        memory.tail = Some(ImageTail::Frozen(tail.freeze(at).map_err(|e| {
                            StateError::Call(format!("cannot freeze memory {m}'s tail: {e}"))
                        })?));
                        High::Written(tail.written_since_frozen(&bytes[from..]))
                    }
                    (Some(tail), Taking::Whole) => {
                        High::UnlessZero(tail.holding_data(&bytes[from..]))
                    }
                    (None, _) => High::UnlessZero(written_pages(&bytes[from..])),
                };
                take_written(&mut memory, bytes, from, high);
            }
            image.memories.push(memory);
        }
        for doors in &self.globals {
            let get = instance
                .get_typed_func::<(), (u64,)>(&mut *store, &doors.get)
                .map_err(call_error)?;
            image
                .globals
                .push(get.call_async(&mut *store, ()).await.map_err(call_error)?.0);
        }
        Ok(image)
    }

    /// Writes `image` into `instance`, fresh from the same component and just past its
    /// start-up (`fresh`), which must be the one the image was taken against. Growing its
    /// memories is charged to the store's limiter first.
    pub async fn restore<T: Send + 'static>(
        &self,
        store: &mut Store<T>,
        instance: &Instance,
        fresh: &mut LiveState,
        image: &InstanceImage,
    ) -> Result<(), StateError> {
        if fresh.startup != image.startup {
            return Err(StateError::StartupDiffers {
                fresh: fresh.startup.clone(),
                image: image.startup.clone(),
            });
        }
        quiet(store, async |store| {
            self.restore_quietly(store, instance, fresh, image).await
        })
        .await
    }

    async fn restore_quietly<T: Send + 'static>(
        &self,
        store: &mut Store<T>,
        instance: &Instance,
        fresh: &mut LiveState,
        image: &InstanceImage,
    ) -> Result<(), StateError> {
        if image.memories.len() != self.memories.len() || image.globals.len() != self.globals.len()
        {
            return Err(StateError::Shape {
                image: image.memories.len(),
                image_globals: image.globals.len(),
                memories: self.memories.len(),
                globals: self.globals.len(),
            });
        }
        let sizes = self.sizes(store, instance).await?;
        for (m, (doors, memory)) in self.memories.iter().zip(&image.memories).enumerate() {
            let now = sizes[m];
            if now > memory.pages {
                return Err(StateError::Larger {
                    memory: m,
                    now,
                    image: memory.pages,
                });
            }
            if memory.pages > now {
                let grow = instance
                    .get_typed_func::<(u32,), (i32,)>(&mut *store, &doors.grow)
                    .map_err(call_error)?;
                let old = grow
                    .call_async(&mut *store, (memory.pages - now,))
                    .await
                    .map_err(call_error)?
                    .0;
                if old < 0 {
                    return Err(StateError::Grow {
                        memory: m,
                        pages: memory.pages,
                    });
                }
            }
            if let Some(image_tail) = &memory.tail {
                let from = image.startup.pages[m] as usize * WASM_PAGE;
                let at = self
                    .placement(store, instance, m, from)
                    .await?
                    .ok_or(StateError::Outside { memory: m })?;
                let mapped = match image_tail {
                    ImageTail::Frozen(frozen) => Tail::copy_of(frozen, at),
                    ImageTail::Filled(file) => {
                        let file = file.lock().unwrap_or_else(|e| e.into_inner()).take();
                        let file = file.ok_or_else(|| {
                            StateError::Call("the image's tail was restored once already".into())
                        })?;
                        Tail::adopt(file, at)
                    }
                };
                let tail = mapped
                    .map_err(|e| StateError::Call(format!("cannot map memory {m}'s tail: {e}")))?;
                if let Some(slot) = fresh.tails.get_mut(m) {
                    *slot = Some(tail);
                }
            }
            let limit = u64::from(memory.pages) * WASM_PAGE as u64;
            let seek = instance
                .get_typed_func::<(u32,), ()>(&mut *store, &doors.seek)
                .map_err(call_error)?;
            let write = instance
                .get_typed_func::<(&[u8],), ()>(&mut *store, &doors.write)
                .map_err(call_error)?;
            for (offset, bytes) in memory.each_run() {
                if u64::from(offset) + bytes.len() as u64 > limit {
                    return Err(StateError::Outside { memory: m });
                }
                seek.call_async(&mut *store, (offset,))
                    .await
                    .map_err(call_error)?;
                write
                    .call_async(&mut *store, (bytes,))
                    .await
                    .map_err(call_error)?;
            }
        }
        for (doors, value) in self.globals.iter().zip(&image.globals) {
            let set = instance
                .get_typed_func::<(u64,), ()>(&mut *store, &doors.set)
                .map_err(call_error)?;
            set.call_async(&mut *store, (*value,))
                .await
                .map_err(call_error)?;
        }
        Ok(())
    }
}

/// Runs `f` with the store's epoch deadline out of reach: the accessors are a few
/// instructions each, called between the calls of a session (when no call's clock says
/// whether to go on), and must not be stopped half-way. The deadline is one tick away
/// again after, as every store of runbox has it between ticks. The hostcall fuel, which
/// bounds what a guest hands the host in one call, does not bound a view of a whole
/// memory, which the host reads in place.
async fn quiet<T: Send + 'static, R>(
    store: &mut Store<T>,
    f: impl AsyncFnOnce(&mut Store<T>) -> R,
) -> R {
    let fuel = store.hostcall_fuel();
    store.set_epoch_deadline(u64::MAX / 2);
    store.set_hostcall_fuel(usize::MAX);
    let result = f(&mut *store).await;
    store.set_hostcall_fuel(fuel);
    store.set_epoch_deadline(1);
    result
}

/// Which host pages of a memory's tail (past its start-up size) an image takes.
enum High {
    /// Those marked that hold more than zeros (what a fresh instance has there).
    UnlessZero(Vec<bool>),
    /// Those marked, whatever they hold (they are written over a shared tail).
    Written(Vec<bool>),
}

/// Copies into `image` the pages of `memory` written since its start-up up to `from`,
/// and those `high` names past it.
fn take_written(image: &mut MemoryImage, memory: &[u8], from: usize, high: High) {
    let page = page_size();
    for (i, written) in written_pages(&memory[..from]).into_iter().enumerate() {
        if written {
            let start = i * page;
            image.push(start, &memory[start..(start + page).min(from)]);
        }
    }
    let (marked, unless_zero) = match high {
        High::UnlessZero(marked) => (marked, true),
        High::Written(marked) => (marked, false),
    };
    for (i, taken) in marked.into_iter().enumerate() {
        let start = from + i * page;
        let bytes = &memory[start..(start + page).min(memory.len())];
        if taken && !(unless_zero && bytes.iter().all(|b| *b == 0)) {
            image.push(start, bytes);
        }
    }
}
