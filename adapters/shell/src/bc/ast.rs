//! What the parser makes of a bc program and the evaluator runs.

use std::sync::Arc;

/// Something that can be assigned to.
#[derive(Debug, Clone)]
pub enum Place {
    Var(String),
    Elem(String, Box<Expr>),
    Scale,
    Ibase,
    Obase,
    Last,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Pow,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

/// A call's argument: a value, or a whole array (`f(a[])`).
#[derive(Debug, Clone)]
pub enum Arg {
    Value(Expr),
    Array(String),
}

#[derive(Debug, Clone)]
pub enum Expr {
    /// A literal's text, read in the `ibase` of the moment it runs.
    Number(String),
    Get(Place),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `place = value`, or `place OP= value`.
    Assign(Place, Option<BinOp>, Box<Expr>),
    /// `++x`, `x--`, ...: `delta` is +1 or -1; `prefix` says which value the expression has.
    Step {
        place: Place,
        delta: i8,
        prefix: bool,
    },
    Call(String, Vec<Arg>),
    Length(Box<Expr>),
    Sqrt(Box<Expr>),
    ScaleOf(Box<Expr>),
    Read,
}

/// One item of a `print` statement.
#[derive(Debug, Clone)]
pub enum PrintItem {
    Str(String),
    Value(Expr),
}

#[derive(Debug, Clone)]
pub enum Stmt {
    /// An expression; printed when the flag is set (it is not an assignment, or it is
    /// one in parentheses).
    Expr(Expr, bool),
    /// A string, printed as it is.
    Str(String),
    Print(Vec<PrintItem>),
    If(Expr, Box<Stmt>, Option<Box<Stmt>>),
    While(Expr, Box<Stmt>),
    For(Option<Expr>, Option<Expr>, Option<Expr>, Box<Stmt>),
    Block(Vec<Stmt>),
    Break,
    Continue,
    Return(Option<Expr>),
    Halt,
    Limits,
    Warranty,
}

/// A parameter or `auto` variable: a name, and whether it is an array (`a[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Local {
    pub name: String,
    pub array: bool,
}

#[derive(Debug)]
pub struct Function {
    pub name: String,
    pub params: Vec<Local>,
    pub autos: Vec<Local>,
    pub body: Vec<Stmt>,
    /// `define void f()`: a call prints nothing.
    pub void: bool,
}

/// What one top-level line holds, run as soon as it is read.
#[derive(Debug)]
pub enum Item {
    Stmt(Stmt),
    Define(Arc<Function>),
}
