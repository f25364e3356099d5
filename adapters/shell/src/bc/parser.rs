//! A recursive-descent parser for bc, one top-level line ("unit") at a time, because bc
//! runs each line as soon as it has read it.
//!
//! Precedence, lowest first, as in GNU bc: `||`, `&&`, `!`, relations, assignment (right
//! to left), `+ -`, `* / %`, `^` (right to left), unary `-`, `++ --`. So `x = 1 < 2` is
//! `(x = 1) < 2` and `-2^2` is 4, as there.

use std::sync::Arc;

use super::ast::{Arg, BinOp, Expr, Function, Item, Local, Place, PrintItem, Stmt};
use super::lexer::{tokenize, Tok, Token};

/// How deeply statements and expressions may nest: deeper programs are refused before they
/// can run the evaluator's recursion off the end of the stack.
pub const MAX_NESTING: usize = 100;

/// What the parser read next.
#[derive(Debug)]
pub enum Unit {
    /// A line's statements and definitions, to run now.
    Items(Vec<Item>),
    /// `quit` was read: bc stops as it reads it, without running its line.
    Quit,
    /// The end of the input.
    End,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: u32,
    pub message: String,
}

/// Why parsing a unit stopped early.
enum Stop {
    Error(SyntaxError),
    Quit,
}

type Parsed<T> = Result<T, Stop>;

pub struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
    loops: usize,
    in_function: bool,
}

const KEYWORDS: [&str; 20] = [
    "auto", "break", "continue", "define", "else", "for", "halt", "ibase", "if", "last", "length",
    "limits", "obase", "print", "quit", "read", "return", "scale", "sqrt", "while",
];

fn is_name(word: &str) -> bool {
    !KEYWORDS.contains(&word) && word != "warranty"
}

impl Parser {
    pub fn new(source: &str) -> Parser {
        Parser {
            tokens: tokenize(source),
            pos: 0,
            depth: 0,
            loops: 0,
            in_function: false,
        }
    }

    /// The next unit; after a syntax error the rest of its line is skipped, so the next
    /// call goes on with the line after.
    pub fn next_unit(&mut self) -> Result<Unit, SyntaxError> {
        self.depth = 0;
        self.loops = 0;
        self.in_function = false;
        match self.unit() {
            Ok(unit) => Ok(unit),
            Err(Stop::Quit) => Ok(Unit::Quit),
            Err(Stop::Error(e)) => {
                self.skip_line();
                Err(e)
            }
        }
    }

    fn unit(&mut self) -> Parsed<Unit> {
        while self.eat(&Tok::Newline) || self.eat_punct(";") {}
        if self.peek() == &Tok::Eof {
            return Ok(Unit::End);
        }
        let mut items = Vec::new();
        loop {
            if self.peek_word("define") {
                items.push(Item::Define(self.define()?));
            } else if !self.at_separator() {
                items.push(Item::Stmt(self.statement()?));
            }
            match self.peek() {
                Tok::Newline => {
                    self.pos += 1;
                    return Ok(Unit::Items(items));
                }
                Tok::Eof => return Ok(Unit::Items(items)),
                Tok::Punct(";") => self.pos += 1,
                _ => return Err(self.unexpected()),
            }
        }
    }

    fn skip_line(&mut self) {
        while !matches!(self.peek(), Tok::Newline | Tok::Eof) {
            self.pos += 1;
        }
        self.eat(&Tok::Newline);
    }

    // --- tokens ---

    fn peek(&self) -> &Tok {
        &self.tokens[self.pos].tok
    }

    fn peek_at(&self, ahead: usize) -> &Tok {
        let last = self.tokens.len() - 1;
        &self.tokens[(self.pos + ahead).min(last)].tok
    }

    fn line(&self) -> u32 {
        self.tokens[self.pos].line
    }

    fn advance(&mut self) -> Tok {
        let tok = self.tokens[self.pos].tok.clone();
        if tok != Tok::Eof {
            self.pos += 1;
        }
        tok
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        let found = self.peek() == tok;
        if found {
            self.pos += 1;
        }
        found
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p) && self.eat(&self.peek().clone())
    }

    fn peek_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }

    fn peek_word(&self, w: &str) -> bool {
        matches!(self.peek(), Tok::Word(v) if v == w)
    }

    fn expect_punct(&mut self, p: &str) -> Parsed<()> {
        if self.eat_punct(p) {
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    fn skip_newlines(&mut self) {
        while self.eat(&Tok::Newline) {}
    }

    fn at_separator(&self) -> bool {
        matches!(self.peek(), Tok::Newline | Tok::Eof | Tok::Punct(";"))
    }

    fn error(&self, message: impl Into<String>) -> Stop {
        Stop::Error(SyntaxError {
            line: self.line(),
            message: message.into(),
        })
    }

    /// "syntax error", or the lexer's own message for a token it could not read.
    fn unexpected(&self) -> Stop {
        match self.peek() {
            Tok::Bad(message) => self.error(message.clone()),
            _ => self.error("syntax error"),
        }
    }

    /// Runs `f` one nesting level deeper, refusing programs nested too deeply.
    fn nested<T>(&mut self, f: impl FnOnce(&mut Parser) -> Parsed<T>) -> Parsed<T> {
        if self.depth >= MAX_NESTING {
            return Err(self.error(format!("nested too deeply (at most {MAX_NESTING} levels)")));
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    // --- definitions ---

    /// `define [void] NAME(PARAMS) { [auto LOCALS] STATEMENTS }`.
    fn define(&mut self) -> Parsed<Arc<Function>> {
        self.pos += 1;
        let void = self.peek_word("void") && matches!(self.peek_at(1), Tok::Word(_));
        if void {
            self.pos += 1;
        }
        let name = self.name()?;
        self.expect_punct("(")?;
        let params = self.locals(")")?;
        self.expect_punct(")")?;
        self.skip_newlines();
        self.expect_punct("{")?;
        self.skip_newlines();
        let mut autos = Vec::new();
        if self.peek_word("auto") {
            self.pos += 1;
            autos = self.locals(";")?;
            if !self.at_separator() {
                return Err(self.unexpected());
            }
        }
        let (loops, in_function) = (self.loops, self.in_function);
        (self.loops, self.in_function) = (0, true);
        let body = self.block_body();
        (self.loops, self.in_function) = (loops, in_function);
        Ok(Arc::new(Function {
            name,
            params,
            autos,
            body: body?,
            void,
        }))
    }

    /// `a, b[], c` up to (not including) `end` or a line's end.
    fn locals(&mut self, end: &str) -> Parsed<Vec<Local>> {
        let mut locals = Vec::new();
        if self.peek_punct(end) {
            return Ok(locals);
        }
        loop {
            if self.peek_punct("*") {
                return Err(self.error("arrays passed by reference (*a[]) are not supported"));
            }
            let name = self.name()?;
            let array = self.peek_punct("[") && self.peek_at(1) == &Tok::Punct("]");
            if array {
                self.pos += 2;
            }
            locals.push(Local { name, array });
            if !self.eat_punct(",") {
                return Ok(locals);
            }
        }
    }

    fn name(&mut self) -> Parsed<String> {
        match self.peek().clone() {
            Tok::Word(w) if is_name(&w) => {
                self.pos += 1;
                Ok(w)
            }
            _ => Err(self.unexpected()),
        }
    }

    // --- statements ---

    fn statement(&mut self) -> Parsed<Stmt> {
        self.nested(Parser::statement_inner)
    }

    fn statement_inner(&mut self) -> Parsed<Stmt> {
        if let Tok::Str(text) = self.peek().clone() {
            self.pos += 1;
            return Ok(Stmt::Str(text));
        }
        if self.eat_punct("{") {
            return Ok(Stmt::Block(self.block_body()?));
        }
        let Tok::Word(word) = self.peek().clone() else {
            return self.expression_statement();
        };
        match word.as_str() {
            "if" => self.if_statement(),
            "while" => self.while_statement(),
            "for" => self.for_statement(),
            "print" => self.print_statement(),
            "break" | "continue" => self.loop_jump(&word),
            "return" => self.return_statement(),
            "quit" => Err(Stop::Quit),
            "halt" => self.keyword(Stmt::Halt),
            "limits" => self.keyword(Stmt::Limits),
            "warranty" => self.keyword(Stmt::Warranty),
            "define" => Err(self.error("a function is defined only at the top level")),
            "auto" => Err(self.error("auto must be the first statement of a function")),
            "else" => Err(self.unexpected()),
            _ => self.expression_statement(),
        }
    }

    fn keyword(&mut self, stmt: Stmt) -> Parsed<Stmt> {
        self.pos += 1;
        Ok(stmt)
    }

    fn expression_statement(&mut self) -> Parsed<Stmt> {
        let parenthesized = self.peek_punct("(");
        let expr = self.expression()?;
        // A bare assignment prints nothing; `(x = 5)` prints 5.
        let print = parenthesized || !matches!(expr, Expr::Assign(..));
        Ok(Stmt::Expr(expr, print))
    }

    /// Statements up to the closing `}`, separated by `;` or newlines.
    fn block_body(&mut self) -> Parsed<Vec<Stmt>> {
        let mut stmts = Vec::new();
        loop {
            while self.eat(&Tok::Newline) || self.eat_punct(";") {}
            if self.eat_punct("}") {
                return Ok(stmts);
            }
            if self.peek() == &Tok::Eof {
                return Err(self.unexpected());
            }
            stmts.push(self.statement()?);
            if !(self.at_separator() || self.peek_punct("}")) {
                return Err(self.unexpected());
            }
        }
    }

    /// `( EXPR )` and the newlines bc allows before the statement it governs.
    fn condition(&mut self) -> Parsed<Expr> {
        self.expect_punct("(")?;
        let cond = self.expression()?;
        self.expect_punct(")")?;
        Ok(cond)
    }

    fn body(&mut self) -> Parsed<Stmt> {
        self.skip_newlines();
        if self.at_separator() {
            // `while (x) ;`: an empty body.
            return Ok(Stmt::Block(Vec::new()));
        }
        self.statement()
    }

    fn if_statement(&mut self) -> Parsed<Stmt> {
        self.pos += 1;
        let cond = self.condition()?;
        let then = self.body()?;
        // GNU bc wants `else` on the same line; newlines before it are allowed here.
        let before = self.pos;
        self.skip_newlines();
        if !self.peek_word("else") {
            self.pos = before;
            return Ok(Stmt::If(cond, Box::new(then), None));
        }
        self.pos += 1;
        let otherwise = self.body()?;
        Ok(Stmt::If(cond, Box::new(then), Some(Box::new(otherwise))))
    }

    fn loop_body(&mut self) -> Parsed<Stmt> {
        self.loops += 1;
        let body = self.body();
        self.loops -= 1;
        body
    }

    fn while_statement(&mut self) -> Parsed<Stmt> {
        self.pos += 1;
        let cond = self.condition()?;
        Ok(Stmt::While(cond, Box::new(self.loop_body()?)))
    }

    /// `for (INIT; COND; STEP) BODY`, each part optional.
    fn for_statement(&mut self) -> Parsed<Stmt> {
        self.pos += 1;
        self.expect_punct("(")?;
        let init = self.optional_expression(";")?;
        self.expect_punct(";")?;
        let cond = self.optional_expression(";")?;
        self.expect_punct(";")?;
        let step = self.optional_expression(")")?;
        self.expect_punct(")")?;
        Ok(Stmt::For(init, cond, step, Box::new(self.loop_body()?)))
    }

    fn optional_expression(&mut self, end: &str) -> Parsed<Option<Expr>> {
        if self.peek_punct(end) {
            return Ok(None);
        }
        Ok(Some(self.expression()?))
    }

    fn print_statement(&mut self) -> Parsed<Stmt> {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            if let Tok::Str(text) = self.peek().clone() {
                self.pos += 1;
                items.push(PrintItem::Str(text));
            } else {
                items.push(PrintItem::Value(self.expression()?));
            }
            if !self.eat_punct(",") {
                return Ok(Stmt::Print(items));
            }
        }
    }

    fn loop_jump(&mut self, word: &str) -> Parsed<Stmt> {
        if self.loops == 0 {
            return Err(self.error(if word == "break" {
                "Break outside a for/while"
            } else {
                "Continue outside a for"
            }));
        }
        self.pos += 1;
        Ok(if word == "break" {
            Stmt::Break
        } else {
            Stmt::Continue
        })
    }

    fn return_statement(&mut self) -> Parsed<Stmt> {
        if !self.in_function {
            return Err(self.error("Return outside of a function."));
        }
        self.pos += 1;
        if self.at_separator() || self.peek_punct("}") {
            return Ok(Stmt::Return(None));
        }
        Ok(Stmt::Return(Some(self.expression()?)))
    }

    // --- expressions ---

    fn expression(&mut self) -> Parsed<Expr> {
        self.nested(Parser::or)
    }

    /// A left-associative level: `next (OP next)*` for the operators in `ops`.
    fn left_assoc(
        &mut self,
        ops: &[(&str, BinOp)],
        next: fn(&mut Parser) -> Parsed<Expr>,
    ) -> Parsed<Expr> {
        let mut left = next(self)?;
        while let Some(&(_, op)) = ops.iter().find(|(p, _)| self.peek_punct(p)) {
            self.pos += 1;
            let right = next(self)?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn or(&mut self) -> Parsed<Expr> {
        self.left_assoc(&[("||", BinOp::Or)], Parser::and)
    }

    fn and(&mut self) -> Parsed<Expr> {
        self.left_assoc(&[("&&", BinOp::And)], Parser::relation)
    }

    fn relation(&mut self) -> Parsed<Expr> {
        let ops = [
            ("==", BinOp::Eq),
            ("!=", BinOp::Ne),
            ("<=", BinOp::Le),
            (">=", BinOp::Ge),
            ("<", BinOp::Lt),
            (">", BinOp::Gt),
        ];
        self.left_assoc(&ops, Parser::assignment)
    }

    fn assignment(&mut self) -> Parsed<Expr> {
        let target = self.additive()?;
        let op = match self.peek() {
            Tok::Punct("=") => None,
            Tok::Punct("+=") => Some(BinOp::Add),
            Tok::Punct("-=") => Some(BinOp::Sub),
            Tok::Punct("*=") => Some(BinOp::Mul),
            Tok::Punct("/=") => Some(BinOp::Div),
            Tok::Punct("%=") => Some(BinOp::Rem),
            Tok::Punct("^=") => Some(BinOp::Pow),
            _ => return Ok(target),
        };
        let Expr::Get(place) = target else {
            return Err(self.unexpected());
        };
        self.pos += 1;
        let value = self.nested(Parser::assignment_value)?;
        Ok(Expr::Assign(place, op, Box::new(value)))
    }

    /// The right side of `=`: another assignment, or a `!` expression.
    fn assignment_value(&mut self) -> Parsed<Expr> {
        if self.peek_punct("!") {
            self.unary()
        } else {
            self.assignment()
        }
    }

    fn additive(&mut self) -> Parsed<Expr> {
        let ops = [("+", BinOp::Add), ("-", BinOp::Sub)];
        self.left_assoc(&ops, Parser::multiplicative)
    }

    fn multiplicative(&mut self) -> Parsed<Expr> {
        let ops = [("*", BinOp::Mul), ("/", BinOp::Div), ("%", BinOp::Rem)];
        self.left_assoc(&ops, Parser::power)
    }

    /// `a ^ b ^ c` is `a ^ (b ^ c)`.
    fn power(&mut self) -> Parsed<Expr> {
        let base = self.unary()?;
        if !self.eat_punct("^") {
            return Ok(base);
        }
        let exponent = self.nested(Parser::power)?;
        Ok(Expr::Binary(BinOp::Pow, Box::new(base), Box::new(exponent)))
    }

    fn unary(&mut self) -> Parsed<Expr> {
        self.nested(Parser::unary_inner)
    }

    fn unary_inner(&mut self) -> Parsed<Expr> {
        if self.eat_punct("-") {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        if self.eat_punct("!") {
            // `!` is below the relations: `!a == b` is `!(a == b)`.
            return Ok(Expr::Not(Box::new(self.nested(Parser::relation)?)));
        }
        for (p, delta) in [("++", 1), ("--", -1)] {
            if self.eat_punct(p) {
                let place = self.place()?;
                return Ok(Expr::Step {
                    place,
                    delta,
                    prefix: true,
                });
            }
        }
        let primary = self.primary()?;
        if let Expr::Get(place) = &primary {
            for (p, delta) in [("++", 1), ("--", -1)] {
                if self.eat_punct(p) {
                    return Ok(Expr::Step {
                        place: place.clone(),
                        delta,
                        prefix: false,
                    });
                }
            }
        }
        Ok(primary)
    }

    fn place(&mut self) -> Parsed<Place> {
        match self.primary()? {
            Expr::Get(place) => Ok(place),
            _ => Err(self.unexpected()),
        }
    }

    fn primary(&mut self) -> Parsed<Expr> {
        match self.advance() {
            Tok::Number(text) => Ok(Expr::Number(text)),
            Tok::Punct("(") => {
                let inner = self.expression()?;
                self.expect_punct(")")?;
                Ok(inner)
            }
            Tok::Word(word) => self.word_expression(word),
            _ => {
                self.pos -= 1;
                Err(self.unexpected())
            }
        }
    }

    /// An expression starting with a word: a variable, an array element, a call, or one
    /// of bc's special names and built-in functions.
    fn word_expression(&mut self, word: String) -> Parsed<Expr> {
        let call = self.peek_punct("(");
        match word.as_str() {
            "last" => Ok(Expr::Get(Place::Last)),
            "ibase" => Ok(Expr::Get(Place::Ibase)),
            "obase" => Ok(Expr::Get(Place::Obase)),
            "scale" if call => Ok(Expr::ScaleOf(Box::new(self.builtin_argument()?))),
            "scale" => Ok(Expr::Get(Place::Scale)),
            "length" => Ok(Expr::Length(Box::new(self.builtin_argument()?))),
            "sqrt" => Ok(Expr::Sqrt(Box::new(self.builtin_argument()?))),
            "read" => {
                self.expect_punct("(")?;
                self.expect_punct(")")?;
                Ok(Expr::Read)
            }
            _ if !is_name(&word) => {
                self.pos -= 1;
                Err(self.unexpected())
            }
            _ if call => {
                self.pos += 1;
                let args = self.arguments()?;
                Ok(Expr::Call(word, args))
            }
            _ if self.eat_punct("[") => {
                let index = self.expression()?;
                self.expect_punct("]")?;
                Ok(Expr::Get(Place::Elem(word, Box::new(index))))
            }
            _ => Ok(Expr::Get(Place::Var(word))),
        }
    }

    fn builtin_argument(&mut self) -> Parsed<Expr> {
        self.expect_punct("(")?;
        let arg = self.expression()?;
        self.expect_punct(")")?;
        Ok(arg)
    }

    /// A call's arguments after its `(`, up to and including the `)`.
    fn arguments(&mut self) -> Parsed<Vec<Arg>> {
        let mut args = Vec::new();
        if self.eat_punct(")") {
            return Ok(args);
        }
        loop {
            let whole_array = matches!(self.peek(), Tok::Word(w) if is_name(w))
                && self.peek_at(1) == &Tok::Punct("[")
                && self.peek_at(2) == &Tok::Punct("]");
            if whole_array {
                args.push(Arg::Array(self.name()?));
                self.pos += 2;
            } else {
                args.push(Arg::Value(self.expression()?));
            }
            if !self.eat_punct(",") {
                self.expect_punct(")")?;
                return Ok(args);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(source: &str) -> Vec<Result<usize, String>> {
        let mut parser = Parser::new(source);
        let mut out = Vec::new();
        loop {
            match parser.next_unit() {
                Ok(Unit::Items(items)) => out.push(Ok(items.len())),
                Ok(Unit::Quit) => {
                    out.push(Err("quit".into()));
                    return out;
                }
                Ok(Unit::End) => return out,
                Err(e) => out.push(Err(format!("{}: {}", e.line, e.message))),
            }
        }
    }

    #[test]
    fn lines_are_units() {
        assert_eq!(units("1; 2\n\n3\n"), vec![Ok(2), Ok(1)]);
        assert_eq!(units("{ 1\n2 }\n4"), vec![Ok(1), Ok(1)]);
        assert_eq!(
            units("1 +\n2\n"),
            vec![Err("1: syntax error".into()), Ok(1)]
        );
        assert_eq!(units("1; quit\n2"), vec![Err("quit".into())]);
        assert_eq!(
            units("break\nreturn 1\n"),
            vec![
                Err("1: Break outside a for/while".into()),
                Err("2: Return outside of a function.".into())
            ]
        );
        assert_eq!(
            units("define f(a, b[]) {\nauto c\nreturn a\n}\nf(1)"),
            vec![Ok(1), Ok(1)]
        );
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("{}1{}", "(".repeat(1000), ")".repeat(1000));
        assert!(matches!(&units(&deep)[0], Err(e) if e.contains("nested too deeply")));
        let minus = "- ".repeat(100_000);
        assert!(matches!(&units(&minus)[0], Err(e) if e.contains("nested too deeply")));
    }
}
