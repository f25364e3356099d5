//! Runs parsed bc: variables (with bc's dynamic scoping: a function's parameters and
//! `auto` variables hide the caller's while it runs), arrays, functions, control flow and
//! printing as GNU bc prints.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::ast::{Arg, BinOp, Expr, Function, Item, Local, Place, PrintItem, Stmt};
use super::mathlib;
use super::number::{Fallible, Num, MAX_IBASE, MAX_OBASE, MAX_SCALE};

/// How deeply functions may call each other.
pub const MAX_CALLS: usize = 1000;
/// How deeply the evaluator may recurse in all (statements, expressions and calls), so a
/// runaway recursion is an error, not a crash at the end of the stack. In the component a
/// level takes about 370 bytes of the 4 MiB WebAssembly stack and 240 of the 8 MiB shadow
/// stack (measured), so 5000 levels stay under 2 MiB.
#[cfg(target_arch = "wasm32")]
const MAX_DEPTH: usize = 5000;
/// Natively only the tests run bc, on 2 MiB threads, where an unoptimized level takes up
/// to about 4.5 KiB.
#[cfg(not(target_arch = "wasm32"))]
const MAX_DEPTH: usize = 300;
/// The largest array index (GNU bc's BC_DIM_MAX).
const MAX_INDEX: i64 = 16_777_215;
/// Output kept in memory before bc gives up on a runaway program.
const MAX_OUTPUT: usize = 32 << 20;
/// GNU bc breaks output lines longer than this (BC_LINE_LENGTH's default) with `\`.
const LINE_LENGTH: usize = 70;

type Array = BTreeMap<u32, Num>;

/// What ends a statement early.
pub enum Jump {
    Break,
    Continue,
    Return(Num),
    /// `halt`: bc stops.
    Halt,
    /// A runtime error: the rest of the line is skipped.
    Error(String),
}

impl From<String> for Jump {
    fn from(message: String) -> Jump {
        Jump::Error(message)
    }
}

type Flow<T> = Result<T, Jump>;

/// Text written so far, broken into lines of at most LINE_LENGTH - 1 characters and a `\`.
#[derive(Default)]
pub struct Output {
    pub text: String,
    column: usize,
}

impl Output {
    fn put(&mut self, s: &str) -> Fallible<()> {
        if self.text.len() + s.len() > MAX_OUTPUT {
            return Err(format!("output too long (more than {MAX_OUTPUT} bytes)"));
        }
        for c in s.chars() {
            if c == '\n' {
                self.column = 0;
            } else {
                self.column += 1;
                if self.column == LINE_LENGTH - 1 {
                    self.text.push_str("\\\n");
                    self.column = 1;
                }
            }
            self.text.push(c);
        }
        Ok(())
    }
}

/// A function bc can call.
enum Callee {
    User(Arc<Function>),
    /// One of the `-l` library's.
    Library,
}

pub struct Interp {
    scale: u64,
    ibase: u32,
    obase: u64,
    last: Num,
    /// Each name's values, innermost call's last.
    vars: HashMap<String, Vec<Num>>,
    arrays: HashMap<String, Vec<Array>>,
    functions: HashMap<String, Arc<Function>>,
    library: bool,
    /// The functions running, innermost last (for messages).
    calls: Vec<String>,
    /// The function a runtime error came from, set as it leaves that function.
    error_function: Option<String>,
    depth: usize,
    pub out: Output,
    pub err: String,
}

impl Interp {
    /// An interpreter; `library` is `-l` (the math library, and scale 20).
    pub fn new(library: bool) -> Interp {
        Interp {
            scale: if library { 20 } else { 0 },
            ibase: 10,
            obase: 10,
            last: Num::zero(),
            vars: HashMap::new(),
            arrays: HashMap::new(),
            functions: HashMap::new(),
            library,
            calls: Vec::new(),
            error_function: None,
            depth: 0,
            out: Output::default(),
            err: String::new(),
        }
    }

    /// Runs one line's items; false once `halt` ran. A runtime error is reported on
    /// stderr and skips the rest of the line, as in GNU bc.
    pub fn run(&mut self, items: Vec<Item>) -> bool {
        for item in items {
            let stmt = match item {
                Item::Define(function) => {
                    self.functions.insert(function.name.clone(), function);
                    continue;
                }
                Item::Stmt(stmt) => stmt,
            };
            match self.exec(&stmt) {
                Ok(()) | Err(Jump::Break | Jump::Continue | Jump::Return(_)) => {}
                Err(Jump::Halt) => return false,
                Err(Jump::Error(message)) => {
                    let function = self.error_function.take();
                    let function = function.as_deref().unwrap_or("(main)");
                    self.err
                        .push_str(&format!("Runtime error (func={function}): {message}\n"));
                    return true;
                }
            }
        }
        true
    }

    fn warn(&mut self, message: &str) {
        let function = self.calls.last().map_or("(main)", String::as_str);
        let line = format!("Runtime warning (func={function}): {message}\n");
        self.err.push_str(&line);
    }

    /// One level deeper into the evaluator's recursion, refused past MAX_DEPTH.
    fn descend(&mut self) -> Flow<()> {
        if self.depth >= MAX_DEPTH {
            return Err(Jump::Error(format!(
                "nested too deeply (at most {MAX_DEPTH} levels of calls, statements and expressions)"
            )));
        }
        self.depth += 1;
        Ok(())
    }

    // --- statements ---

    fn exec(&mut self, stmt: &Stmt) -> Flow<()> {
        self.descend()?;
        let result = self.exec_inner(stmt);
        self.depth -= 1;
        result
    }

    fn exec_inner(&mut self, stmt: &Stmt) -> Flow<()> {
        match stmt {
            Stmt::Expr(expr, print) => {
                let value = self.eval(expr)?;
                if *print && !self.is_void_call(expr) {
                    self.print_number(&value)?;
                    self.out.put("\n")?;
                    self.last = value;
                }
                Ok(())
            }
            Stmt::Str(text) => Ok(self.out.put(text)?),
            Stmt::Print(items) => self.print(items),
            Stmt::If(cond, then, otherwise) => {
                if self.truth(cond)? {
                    self.exec(then)
                } else if let Some(otherwise) = otherwise {
                    self.exec(otherwise)
                } else {
                    Ok(())
                }
            }
            Stmt::While(cond, body) => self.run_loop(Some(cond), None, body),
            Stmt::For(init, cond, step, body) => {
                if let Some(init) = init {
                    self.eval(init)?;
                }
                self.run_loop(cond.as_ref(), step.as_ref(), body)
            }
            Stmt::Block(stmts) => self.exec_body(stmts),
            Stmt::Break => Err(Jump::Break),
            Stmt::Continue => Err(Jump::Continue),
            Stmt::Return(value) => {
                let value = match value {
                    Some(expr) => self.eval(expr)?,
                    None => Num::zero(),
                };
                Err(Jump::Return(value))
            }
            Stmt::Halt => Err(Jump::Halt),
            Stmt::Limits => Ok(self.out.put(&limits())?),
            Stmt::Warranty => Ok(self.out.put(WARRANTY)?),
        }
    }

    fn exec_body(&mut self, stmts: &[Stmt]) -> Flow<()> {
        for stmt in stmts {
            self.exec(stmt)?;
        }
        Ok(())
    }

    /// `while (cond) body`, or a `for` loop's test, body and step; no test loops forever.
    fn run_loop(&mut self, cond: Option<&Expr>, step: Option<&Expr>, body: &Stmt) -> Flow<()> {
        loop {
            if let Some(cond) = cond {
                if !self.truth(cond)? {
                    return Ok(());
                }
            }
            match self.exec(body) {
                Ok(()) | Err(Jump::Continue) => {}
                Err(Jump::Break) => return Ok(()),
                Err(other) => return Err(other),
            }
            if let Some(step) = step {
                self.eval(step)?;
            }
        }
    }

    fn truth(&mut self, cond: &Expr) -> Flow<bool> {
        Ok(!self.eval(cond)?.is_zero())
    }

    fn is_void_call(&self, expr: &Expr) -> bool {
        matches!(expr, Expr::Call(name, _)
            if self.functions.get(name).is_some_and(|f| f.void))
    }

    fn print(&mut self, items: &[PrintItem]) -> Flow<()> {
        for item in items {
            match item {
                PrintItem::Str(text) => self.out.put(&unescape(text))?,
                PrintItem::Value(expr) => {
                    let value = self.eval(expr)?;
                    self.print_number(&value)?;
                    self.last = value;
                }
            }
        }
        Ok(())
    }

    fn print_number(&mut self, value: &Num) -> Fallible<()> {
        self.out.put(&value.format(self.obase))
    }

    // --- expressions ---

    fn eval(&mut self, expr: &Expr) -> Flow<Num> {
        self.descend()?;
        let result = self.eval_inner(expr);
        self.depth -= 1;
        result
    }

    fn eval_inner(&mut self, expr: &Expr) -> Flow<Num> {
        Ok(match expr {
            Expr::Number(text) => Num::parse(text, self.ibase)?,
            Expr::Get(place) => self.get(place)?,
            Expr::Neg(inner) => self.eval(inner)?.neg(),
            Expr::Not(inner) => flag(self.eval(inner)?.is_zero()),
            Expr::Binary(BinOp::And, a, b) => flag(self.truth(a)? && self.truth(b)?),
            Expr::Binary(BinOp::Or, a, b) => flag(self.truth(a)? || self.truth(b)?),
            Expr::Binary(op, a, b) => self.binary(*op, a, b)?,
            Expr::Assign(place, op, value) => self.assign(place, *op, value)?,
            Expr::Step {
                place,
                delta,
                prefix,
            } => self.step(place, *delta, *prefix)?,
            Expr::Call(name, args) => self.call(name, args)?,
            Expr::Length(inner) => Num::from_int(self.eval(inner)?.length()),
            Expr::Sqrt(inner) => self.eval(inner)?.sqrt(self.scale)?,
            Expr::ScaleOf(inner) => Num::from_int(self.eval(inner)?.scale()),
            Expr::Read => return Err(Jump::Error("read() is not supported".into())),
        })
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> Flow<Num> {
        let a = self.eval(a)?;
        let b = self.eval(b)?;
        Ok(self.arith(op, &a, &b)?)
    }

    fn assign(&mut self, place: &Place, op: Option<BinOp>, value: &Expr) -> Flow<Num> {
        let mut value = self.eval(value)?;
        if let Some(op) = op {
            let current = self.get(place)?;
            value = self.arith(op, &current, &value)?;
        }
        self.set(place, value)
    }

    /// `++x` / `x++` (`delta` 1) and `--x` / `x--` (-1).
    fn step(&mut self, place: &Place, delta: i8, prefix: bool) -> Flow<Num> {
        let old = self.get(place)?;
        let new = self.set(place, old.add(&Num::from_int(delta))?)?;
        Ok(if prefix { new } else { old })
    }

    fn arith(&mut self, op: BinOp, a: &Num, b: &Num) -> Fallible<Num> {
        let scale = self.scale;
        Ok(match op {
            BinOp::Add => a.add(b)?,
            BinOp::Sub => a.sub(b)?,
            BinOp::Mul => a.mul(b, scale)?,
            BinOp::Div => a.div(b, scale)?,
            BinOp::Rem => a.rem(b, scale)?,
            BinOp::Pow => {
                if b.scale() > 0 {
                    self.warn("non-zero scale in exponent");
                }
                a.pow(b, scale)?
            }
            BinOp::Eq => flag(a == b),
            BinOp::Ne => flag(a != b),
            BinOp::Lt => flag(a < b),
            BinOp::Le => flag(a <= b),
            BinOp::Gt => flag(a > b),
            BinOp::Ge => flag(a >= b),
            BinOp::And => flag(!a.is_zero() && !b.is_zero()),
            BinOp::Or => flag(!a.is_zero() || !b.is_zero()),
        })
    }

    // --- variables ---

    fn get(&mut self, place: &Place) -> Flow<Num> {
        Ok(match place {
            Place::Var(name) => self
                .vars
                .get(name)
                .and_then(|stack| stack.last())
                .cloned()
                .unwrap_or_default(),
            Place::Elem(name, index) => {
                let index = self.index(name, index)?;
                self.arrays
                    .get(name)
                    .and_then(|stack| stack.last())
                    .and_then(|array| array.get(&index))
                    .cloned()
                    .unwrap_or_default()
            }
            Place::Scale => Num::from_int(self.scale),
            Place::Ibase => Num::from_int(self.ibase),
            Place::Obase => Num::from_int(self.obase),
            Place::Last => self.last.clone(),
        })
    }

    /// Stores `value` in `place` and returns what was stored.
    fn set(&mut self, place: &Place, value: Num) -> Flow<Num> {
        match place {
            Place::Var(name) => {
                let stack = self.vars.entry(name.clone()).or_default();
                match stack.last_mut() {
                    Some(slot) => *slot = value.clone(),
                    None => stack.push(value.clone()),
                }
            }
            Place::Elem(name, index) => {
                let index = self.index(name, index)?;
                let stack = self.arrays.entry(name.clone()).or_default();
                if stack.is_empty() {
                    stack.push(Array::new());
                }
                if let Some(array) = stack.last_mut() {
                    array.insert(index, value.clone());
                }
            }
            Place::Scale => {
                let scale = self.clamped(&value, 0, MAX_SCALE, "scale")?;
                self.scale = scale;
                return Ok(Num::from_int(scale));
            }
            Place::Ibase => {
                self.ibase = self.clamped(&value, 2, MAX_IBASE, "ibase")? as u32;
                return Ok(Num::from_int(self.ibase));
            }
            Place::Obase => {
                self.obase = self.clamped(&value, 2, MAX_OBASE, "obase")?;
                return Ok(Num::from_int(self.obase));
            }
            Place::Last => self.last = value.clone(),
        }
        Ok(value)
    }

    /// The integer part of `value` for `scale`, `ibase` or `obase`: below `low` it is
    /// set to `low` with a warning, as GNU bc does; too large a scale is an error (it
    /// would make every division enormous), too large a base is set to the largest.
    fn clamped(&mut self, value: &Num, low: u64, high: u64, what: &str) -> Fallible<u64> {
        let int = value.trunc();
        if int < low.into() {
            let message = if what == "scale" {
                "negative scale, set to 0".to_string()
            } else {
                format!("{what} too small, set to {low}")
            };
            self.warn(&message);
            return Ok(low);
        }
        match int.try_into() {
            Ok(n) if n <= high => Ok(n),
            _ if what == "scale" => Err(format!("scale too large (at most {high})")),
            _ => {
                self.warn(&format!("{what} too large, set to {high}"));
                Ok(high)
            }
        }
    }

    fn index(&mut self, name: &str, index: &Expr) -> Flow<u32> {
        let value = self.eval(index)?;
        match value.to_i64() {
            Some(i) if (0..=MAX_INDEX).contains(&i) => Ok(i as u32),
            _ => Err(Jump::Error(format!(
                "Array {name} subscript out of bounds."
            ))),
        }
    }

    // --- functions ---

    fn callee(&self, name: &str) -> Fallible<Callee> {
        if let Some(function) = self.functions.get(name) {
            return Ok(Callee::User(function.clone()));
        }
        if self.library && mathlib::call(name, &[], 0).is_some() {
            return Ok(Callee::Library);
        }
        Err(format!("Function {name} not defined."))
    }

    fn call(&mut self, name: &str, args: &[Arg]) -> Flow<Num> {
        let function = match self.callee(name)? {
            Callee::User(function) => function,
            Callee::Library => return self.call_library(name, args),
        };
        if args.len() != function.params.len() {
            return Err(Jump::Error("Parameter number mismatch".into()));
        }
        if self.calls.len() >= MAX_CALLS {
            return Err(Jump::Error(format!(
                "function calls nested too deeply (at most {MAX_CALLS})"
            )));
        }
        // The arguments are evaluated in the caller's scope, before any is bound.
        let mut bound = Vec::with_capacity(args.len());
        for (param, arg) in function.params.iter().zip(args) {
            bound.push(self.argument(param, arg)?);
        }
        self.enter(&function, bound);
        let result = self.exec_body(&function.body);
        self.leave(&function);
        match result {
            Ok(()) => Ok(Num::zero()),
            Err(Jump::Return(value)) => Ok(value),
            Err(Jump::Error(message)) => {
                self.error_function.get_or_insert_with(|| name.to_string());
                Err(Jump::Error(message))
            }
            Err(other) => Err(other),
        }
    }

    fn call_library(&mut self, name: &str, args: &[Arg]) -> Flow<Num> {
        let mut values = Vec::with_capacity(args.len());
        for arg in args {
            match arg {
                Arg::Value(expr) => values.push(self.eval(expr)?),
                Arg::Array(_) => return Err(Jump::Error("Parameter type mismatch".into())),
            }
        }
        let result = mathlib::call(name, &values, self.scale)
            .unwrap_or_else(|| Err(format!("Function {name} not defined.")));
        result.map_err(|message| {
            self.error_function.get_or_insert_with(|| name.to_string());
            Jump::Error(message)
        })
    }

    /// An argument's value for the parameter `param`: a number, or a copy of an array.
    fn argument(&mut self, param: &Local, arg: &Arg) -> Flow<Binding> {
        match (param.array, arg) {
            (false, Arg::Value(expr)) => Ok(Binding::Value(self.eval(expr)?)),
            (true, Arg::Array(name)) => {
                let array = self.arrays.get(name).and_then(|s| s.last()).cloned();
                Ok(Binding::Array(array.unwrap_or_default()))
            }
            _ => Err(Jump::Error(format!(
                "Parameter type mismatch, parameter {}.",
                param.name
            ))),
        }
    }

    /// Binds the parameters and fresh `auto` variables over the caller's.
    fn enter(&mut self, function: &Function, bound: Vec<Binding>) {
        for (param, value) in function.params.iter().zip(bound) {
            match value {
                Binding::Value(v) => self.vars.entry(param.name.clone()).or_default().push(v),
                Binding::Array(a) => self.arrays.entry(param.name.clone()).or_default().push(a),
            }
        }
        for local in &function.autos {
            if local.array {
                let stack = self.arrays.entry(local.name.clone()).or_default();
                stack.push(Array::new());
            } else {
                self.vars
                    .entry(local.name.clone())
                    .or_default()
                    .push(Num::zero());
            }
        }
        self.calls.push(function.name.clone());
    }

    /// Drops what [`Interp::enter`] bound, uncovering the caller's variables.
    fn leave(&mut self, function: &Function) {
        for local in function.params.iter().chain(&function.autos) {
            if local.array {
                self.arrays.get_mut(&local.name).and_then(Vec::pop);
            } else {
                self.vars.get_mut(&local.name).and_then(Vec::pop);
            }
        }
        self.calls.pop();
    }
}

enum Binding {
    Value(Num),
    Array(Array),
}

fn flag(b: bool) -> Num {
    Num::from_int(u8::from(b))
}

/// A `print` string's escapes: `\n \t \a \b \f \r`, `\q` for `"` and `\\` for `\`; GNU
/// bc drops any other backslash pair.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escaped = match chars.next() {
            Some('n') => '\n',
            Some('t') => '\t',
            Some('a') => '\x07',
            Some('b') => '\x08',
            Some('f') => '\x0c',
            Some('r') => '\r',
            Some('q') => '"',
            Some('\\') => '\\',
            _ => continue,
        };
        out.push(escaped);
    }
    out
}

fn limits() -> String {
    format!(
        "BC_BASE_MAX     = {MAX_OBASE}\nBC_DIM_MAX      = {MAX_INDEX}\nBC_SCALE_MAX    = {MAX_SCALE}\nBC_STRING_MAX   = {}\nMAX Exponent    = {}\nNumber of vars  = {}\n",
        i32::MAX,
        i64::MAX,
        i32::MAX
    )
}

const WARRANTY: &str = "runbox's bc, part of runbox, comes with no warranty.\n";
