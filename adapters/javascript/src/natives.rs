//! The natives: the primitives in Rust the prelude builds the globals from (output,
//! standard input, files, `exit`, the clock, the tools' device, the network's device).

use std::path::Path;

use crate::event_loop::Host;
use crate::output::Stream;
use boa_engine::builtins::promise::PromiseState;
use boa_engine::error::PanicError;
use boa_engine::object::builtins::{JsArray, JsArrayBuffer, JsPromise, JsTypedArray, JsUint8Array};
use boa_engine::object::{JsObject, ObjectInitializer};
use boa_engine::property::Attribute;
use boa_engine::{
    js_string, Context, JsError, JsNativeError, JsResult, JsString, JsValue, NativeFunction, Source,
};

/// The Boa version, as the runtime reports it (keep in step with Cargo.toml).
pub const BOA_VERSION: &str = "0.22.0";

/// The globals' sources, by the names their stack frames show (`runbox:…`, which
/// `prelude.js` leaves out of errors' stacks). The prelude runs in every interpreter; it
/// loads the others (see [`native_load`]) when a program first needs them.
pub(crate) const PRELUDE: (&str, &str) = ("runbox:prelude.js", include_str!("prelude.js"));
pub(crate) const PARTS: &[(&str, &str, &str)] = &[
    ("inspect", "runbox:inspect.js", include_str!("inspect.js")),
    ("node", "runbox:node.js", include_str!("node.js")),
    ("tools", "runbox:tools.js", include_str!("tools.js")),
    ("fetch", "runbox:fetch.js", include_str!("fetch.js")),
];

/// The object of native functions handed to the prelude.
pub(crate) fn natives(context: &mut Context) -> JsObject {
    let mut natives = ObjectInitializer::new(context);
    for (name, length, function) in [
        ("load", 1, native_load as NativeFn),
        ("write", 2, native_write),
        ("readStdin", 0, native_read_stdin),
        ("readStdinBytes", 0, native_read_stdin_bytes),
        ("readLine", 0, native_read_line),
        ("exit", 1, native_exit),
        ("now", 0, native_now),
        ("promiseState", 1, native_promise_state),
        ("readFile", 1, native_read_file),
        ("writeFile", 3, native_write_file),
        ("exists", 1, native_exists),
        ("readdir", 1, native_readdir),
        ("mkdir", 2, native_mkdir),
        ("remove", 3, native_remove),
        ("rename", 2, native_rename),
        ("stat", 1, native_stat),
        ("encodeUtf8", 1, native_encode_utf8),
        ("decodeUtf8", 3, native_decode_utf8),
        ("toolCall", 1, native_tool_call),
        ("toolsManifest", 0, native_tools_manifest),
        ("netFetch", 1, native_net_fetch),
        ("environ", 0, native_environ),
        ("encodeBase64", 1, native_encode_base64),
        ("decodeBase64", 1, native_decode_base64),
    ] {
        natives.function(
            NativeFunction::from_fn_ptr(function),
            js_string!(name),
            length,
        );
    }
    natives.property(
        js_string!("version"),
        JsString::from(BOA_VERSION),
        Attribute::READONLY,
    );
    natives.build()
}

type NativeFn = fn(&JsValue, &[JsValue], &mut Context) -> JsResult<JsValue>;

fn arg(args: &[JsValue], i: usize) -> JsValue {
    args.get(i).cloned().unwrap_or_default()
}

fn string_arg(args: &[JsValue], i: usize, context: &mut Context) -> JsResult<String> {
    Ok(arg(args, i).to_string(context)?.to_std_string_lossy())
}

/// The bytes of a string (as UTF-8) or of a typed array.
fn bytes_arg(value: &JsValue, context: &mut Context) -> JsResult<Vec<u8>> {
    if let Some(object) = value.as_object() {
        if let Ok(array) = JsTypedArray::from_object(object.clone()) {
            let offset = array.byte_offset(context)?;
            let length = array.byte_length(context)?;
            let buffer = array.buffer(context)?;
            let buffer = buffer
                .as_object()
                .and_then(|b| JsArrayBuffer::from_object(b.clone()).ok())
                .ok_or_else(|| JsNativeError::typ().with_message("not an ArrayBuffer"))?;
            let data = buffer
                .data()
                .ok_or_else(|| JsNativeError::typ().with_message("detached ArrayBuffer"))?;
            return Ok(data
                .get(offset..offset + length)
                .unwrap_or_default()
                .to_vec());
        }
    }
    Ok(value.to_string(context)?.to_std_string_lossy().into_bytes())
}

/// `load(name)`: evaluates a part of the globals (`inspect`, `node`); its value is the
/// function that sets it up.
fn native_load(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let name = string_arg(args, 0, context)?;
    let (_, path, code) = PARTS
        .iter()
        .find(|(part, _, _)| *part == name)
        .ok_or_else(|| JsNativeError::typ().with_message(format!("no part `{name}`")))?;
    context.eval(Source::from_bytes(code).with_path(Path::new(path)))
}

/// `write(fd, data)`: data to standard output (1) or error (2).
fn native_write(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let stream = match arg(args, 0).to_i32(context)? {
        2 => Stream::Stderr,
        _ => Stream::Stdout,
    };
    let bytes = bytes_arg(&arg(args, 1), context)?;
    Host::from_context(context).output.write(stream, &bytes);
    Ok(JsValue::undefined())
}

fn native_read_stdin(_: &JsValue, _: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let bytes = Host::from_context(context).take_stdin();
    Ok(JsString::from(String::from_utf8_lossy(&bytes).as_ref()).into())
}

fn native_read_stdin_bytes(_: &JsValue, _: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let bytes = Host::from_context(context).take_stdin();
    Ok(JsUint8Array::from_iter(bytes, context)?.into())
}

fn native_read_line(_: &JsValue, _: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    Ok(match Host::from_context(context).read_line() {
        Some(line) => JsString::from(String::from_utf8_lossy(&line).as_ref()).into(),
        None => JsValue::null(),
    })
}

/// `encodeUtf8(string)`: its UTF-8 bytes (a lone surrogate becomes U+FFFD).
fn native_encode_utf8(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let text = string_arg(args, 0, context)?;
    Ok(JsUint8Array::from_iter(text.into_bytes(), context)?.into())
}

/// `decodeUtf8(bytes, fatal, ignoreBOM)`: the text of UTF-8 bytes; invalid sequences
/// become U+FFFD, or with `fatal` a TypeError.
fn native_decode_utf8(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let bytes = bytes_arg(&arg(args, 0), context)?;
    let text = decode_utf8(&bytes, arg(args, 1).to_boolean(), arg(args, 2).to_boolean())
        .ok_or_else(|| {
            JsNativeError::typ().with_message("The encoded data was not valid for encoding utf-8")
        })?;
    Ok(JsString::from(text.as_str()).into())
}

/// UTF-8 as `TextDecoder` decodes it: `None` for invalid bytes when `fatal`.
pub(crate) fn decode_utf8(bytes: &[u8], fatal: bool, ignore_bom: bool) -> Option<String> {
    let bytes = match bytes.strip_prefix(b"\xEF\xBB\xBF") {
        Some(rest) if !ignore_bom => rest,
        _ => bytes,
    };
    if fatal {
        std::str::from_utf8(bytes).ok().map(str::to_owned)
    } else {
        Some(String::from_utf8_lossy(bytes).into_owned())
    }
}

/// `toolCall(request)`: one call through the device of code mode's tools (`/tools/call`):
/// the request's JSON text in, the answer's out (an `unavailable` answer without a device).
fn native_tool_call(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let request = string_arg(args, 0, context)?;
    let dir = Host::from_context(context).tools_dir.borrow().clone();
    let answer = runbox_adapter_support::tools::call(&dir, request.as_bytes());
    Ok(JsString::from(answer.as_str()).into())
}

/// `toolsManifest()`: the text of `/tools/tools.json`, or `null` when there is none.
fn native_tools_manifest(_: &JsValue, _: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let dir = Host::from_context(context).tools_dir.borrow().clone();
    Ok(match runbox_adapter_support::tools::manifest(&dir) {
        Some(text) => JsString::from(text.as_str()).into(),
        None => JsValue::null(),
    })
}

/// `netFetch(request)`: one request through the network's device (`/net/fetch`): the
/// request's JSON text in, the answer's out; `null` when there is no device (no network
/// policy).
fn native_net_fetch(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let request = string_arg(args, 0, context)?;
    let dir = Host::from_context(context).net_dir.borrow().clone();
    Ok(match crate::net::fetch(&dir, request.as_bytes()) {
        Some(answer) => JsString::from(answer.as_str()).into(),
        None => JsValue::null(),
    })
}

/// `environ()`: the run's environment (a network policy's secret placeholders among it),
/// as an object.
fn native_environ(_: &JsValue, _: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let env = JsObject::with_object_proto(context.intrinsics());
    for (name, value) in std::env::vars() {
        env.create_data_property_or_throw(
            JsString::from(name.as_str()),
            JsString::from(value.as_str()),
            context,
        )?;
    }
    Ok(env.into())
}

/// `encodeBase64(data)`: the bytes of a typed array (or a string's UTF-8) in base64.
fn native_encode_base64(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let bytes = bytes_arg(&arg(args, 0), context)?;
    Ok(JsString::from(crate::net::encode_base64(&bytes).as_str()).into())
}

/// `decodeBase64(text)`: the bytes of base64 text, a Uint8Array; a TypeError when it is
/// not base64.
fn native_decode_base64(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let text = string_arg(args, 0, context)?;
    let bytes = crate::net::decode_base64(&text)
        .ok_or_else(|| JsNativeError::typ().with_message("not base64"))?;
    Ok(JsUint8Array::from_iter(bytes, context)?.into())
}

/// `exit(code)`: records the code and unwinds with an error no `catch` can stop.
fn native_exit(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let code = arg(args, 0).to_i32(context)?;
    Host::from_context(context).exit.set(Some(code));
    Err(PanicError::new("exit").into())
}

/// Milliseconds since the interpreter started (monotonic, fractional).
fn native_now(_: &JsValue, _: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let host = Host::from_context(context);
    Ok(JsValue::from(host.started.elapsed().as_secs_f64() * 1000.0))
}

/// `promiseState(p)`: `[0]` pending, `[1, value]` fulfilled, `[2, reason]` rejected, or
/// `undefined` for a value that is not a promise.
fn native_promise_state(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let Some(promise) = arg(args, 0)
        .as_object()
        .and_then(|o| JsPromise::from_object(o.clone()).ok())
    else {
        return Ok(JsValue::undefined());
    };
    let items = match promise.state() {
        PromiseState::Pending => vec![JsValue::from(0)],
        PromiseState::Fulfilled(v) => vec![JsValue::from(1), v],
        PromiseState::Rejected(v) => vec![JsValue::from(2), v],
    };
    Ok(JsArray::from_iter(items, context).into())
}

/// An `Error` worded like Node.js's, e.g. `ENOENT: no such file or directory, open 'x'`
/// (`prelude.js` turns the prefix into `err.code`).
fn fs_error(e: &std::io::Error, syscall: &str, path: &str) -> JsError {
    JsNativeError::error()
        .with_message(fs_error_message(e, syscall, path))
        .into()
}

pub(crate) fn fs_error_message(e: &std::io::Error, syscall: &str, path: &str) -> String {
    use std::io::ErrorKind::*;
    let (code, text) = match e.kind() {
        NotFound => ("ENOENT", "no such file or directory"),
        PermissionDenied | ReadOnlyFilesystem => ("EACCES", "permission denied"),
        AlreadyExists => ("EEXIST", "file already exists"),
        IsADirectory => ("EISDIR", "illegal operation on a directory"),
        NotADirectory => ("ENOTDIR", "not a directory"),
        DirectoryNotEmpty => ("ENOTEMPTY", "directory not empty"),
        InvalidInput | InvalidFilename => ("EINVAL", "invalid argument"),
        // The scratch directory's caps (bytes, files) refuse with ENOSPC.
        StorageFull => ("ENOSPC", "no space left on device"),
        QuotaExceeded => ("EDQUOT", "disk quota exceeded"),
        FileTooLarge => ("EFBIG", "file too large"),
        _ => ("EIO", "i/o error"),
    };
    format!("{code}: {text}, {syscall} '{path}'")
}

fn native_read_file(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let path = string_arg(args, 0, context)?;
    let bytes = std::fs::read(&path).map_err(|e| fs_error(&e, "open", &path))?;
    Ok(JsUint8Array::from_iter(bytes, context)?.into())
}

/// `writeFile(path, data, append)`.
fn native_write_file(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let path = string_arg(args, 0, context)?;
    let bytes = bytes_arg(&arg(args, 1), context)?;
    let append = arg(args, 2).to_boolean();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(!append)
        .open(&path)
        .map_err(|e| fs_error(&e, "open", &path))?;
    let end = if append {
        file.metadata()
            .map_err(|e| fs_error(&e, "open", &path))?
            .len()
    } else {
        0
    };
    runbox_adapter_support::write_all_at(&file, &bytes, end)
        .map_err(|e| fs_error(&e, "write", &path))?;
    Ok(JsValue::undefined())
}

fn native_exists(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let path = string_arg(args, 0, context)?;
    Ok(Path::new(&path).exists().into())
}

fn native_readdir(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let path = string_arg(args, 0, context)?;
    let entries = std::fs::read_dir(&path).map_err(|e| fs_error(&e, "scandir", &path))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| fs_error(&e, "scandir", &path))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        names.push(JsValue::from(JsString::from(name.as_str())));
    }
    Ok(JsArray::from_iter(names, context).into())
}

/// `mkdir(path, recursive)`.
fn native_mkdir(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let path = string_arg(args, 0, context)?;
    let result = if arg(args, 1).to_boolean() {
        std::fs::create_dir_all(&path)
    } else {
        std::fs::create_dir(&path)
    };
    result.map_err(|e| fs_error(&e, "mkdir", &path))?;
    Ok(JsValue::undefined())
}

/// `remove(path, recursive, force)`: a file, or a directory (empty unless `recursive`);
/// with `force` a missing path is no error.
fn native_remove(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let path = string_arg(args, 0, context)?;
    let recursive = arg(args, 1).to_boolean();
    let force = arg(args, 2).to_boolean();
    let result = match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_dir() && recursive => std::fs::remove_dir_all(&path),
        Ok(meta) if meta.is_dir() => std::fs::remove_dir(&path),
        Ok(_) => std::fs::remove_file(&path),
        Err(e) => Err(e),
    };
    match result {
        Err(e) if !(force && e.kind() == std::io::ErrorKind::NotFound) => {
            Err(fs_error(&e, "rm", &path))
        }
        _ => Ok(JsValue::undefined()),
    }
}

fn native_rename(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let from = string_arg(args, 0, context)?;
    let to = string_arg(args, 1, context)?;
    std::fs::rename(&from, &to).map_err(|e| fs_error(&e, "rename", &from))?;
    Ok(JsValue::undefined())
}

/// `stat(path)`: `{ size, isFile, isDirectory, mtimeMs }`.
fn native_stat(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let path = string_arg(args, 0, context)?;
    let meta = std::fs::metadata(&path).map_err(|e| fs_error(&e, "stat", &path))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0);
    let mut stat = ObjectInitializer::new(context);
    stat.property(js_string!("size"), meta.len() as f64, Attribute::all())
        .property(js_string!("isFile"), meta.is_file(), Attribute::all())
        .property(js_string!("isDirectory"), meta.is_dir(), Attribute::all())
        .property(js_string!("mtimeMs"), mtime, Attribute::all());
    Ok(stat.build().into())
}
