//! bc's tokens. Numbers keep their text: their value depends on `ibase` when they run.

/// One token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    /// Digits `0-9A-Z` with at most one point (`.5`, `1.`, `FF`).
    Number(String),
    /// A lower-case name, keywords included (`scale`, `define`, `x1`); a lone `.` is `last`.
    Word(String),
    /// `"text"`, as written (print handles the escapes).
    Str(String),
    /// An operator or punctuation: `+ ++ += == && ( { [ , ;` ...
    Punct(&'static str),
    Newline,
    /// Something bc cannot read; the message says what.
    Bad(String),
    Eof,
}

/// A token and the line it starts on.
#[derive(Debug, Clone)]
pub struct Token {
    pub tok: Tok,
    pub line: u32,
}

/// Longest first, so `+=` wins over `+`.
const PUNCTS: [&str; 31] = [
    "++", "--", "+=", "-=", "*=", "/=", "%=", "^=", "==", "!=", "<=", ">=", "&&", "||", "+", "-",
    "*", "/", "%", "^", "=", "<", ">", "!", "(", ")", "{", "}", "[", "]", ",",
];

/// All the tokens of `source`, ending with [`Tok::Eof`].
pub fn tokenize(source: &str) -> Vec<Token> {
    let mut lexer = Lexer {
        bytes: source.as_bytes(),
        pos: 0,
        line: 1,
        tokens: Vec::new(),
    };
    lexer.run();
    lexer.tokens
}

struct Lexer<'a> {
    bytes: &'a [u8],
    pos: usize,
    line: u32,
    tokens: Vec<Token>,
}

impl Lexer<'_> {
    fn run(&mut self) {
        while let Some(c) = self.peek(0) {
            let line = self.line;
            let tok = match c {
                b' ' | b'\t' | b'\r' | b'\x0c' => {
                    self.pos += 1;
                    continue;
                }
                // A backslash-newline joins two lines.
                b'\\' if self.peek(1) == Some(b'\n') => {
                    self.pos += 2;
                    self.line += 1;
                    continue;
                }
                b'\n' => {
                    self.pos += 1;
                    self.line += 1;
                    Tok::Newline
                }
                b';' => {
                    self.pos += 1;
                    Tok::Punct(";")
                }
                b'#' => {
                    self.skip_line_comment();
                    continue;
                }
                b'/' if self.peek(1) == Some(b'*') => match self.skip_block_comment() {
                    Ok(()) => continue,
                    Err(bad) => bad,
                },
                b'"' => self.string(),
                b'0'..=b'9' | b'A'..=b'Z' => self.number(),
                b'.' if matches!(self.peek(1), Some(b'0'..=b'9' | b'A'..=b'Z')) => self.number(),
                b'.' => {
                    self.pos += 1;
                    Tok::Word("last".into())
                }
                b'a'..=b'z' => self.word(),
                _ => self.punct(),
            };
            self.tokens.push(Token { tok, line });
        }
        self.tokens.push(Token {
            tok: Tok::Eof,
            line: self.line,
        });
    }

    fn peek(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.pos + ahead).copied()
    }

    fn skip_line_comment(&mut self) {
        while !matches!(self.peek(0), None | Some(b'\n')) {
            self.pos += 1;
        }
    }

    fn skip_block_comment(&mut self) -> Result<(), Tok> {
        self.pos += 2;
        loop {
            match self.peek(0) {
                None => return Err(Tok::Bad("unterminated comment".into())),
                Some(b'*') if self.peek(1) == Some(b'/') => {
                    self.pos += 2;
                    return Ok(());
                }
                Some(c) => {
                    self.line += u32::from(c == b'\n');
                    self.pos += 1;
                }
            }
        }
    }

    fn string(&mut self) -> Tok {
        let start = self.pos + 1;
        let Some(len) = self.bytes[start..].iter().position(|&c| c == b'"') else {
            self.pos = self.bytes.len();
            return Tok::Bad("unterminated string".into());
        };
        let text = &self.bytes[start..start + len];
        self.line += text.iter().filter(|&&c| c == b'\n').count() as u32;
        self.pos = start + len + 1;
        Tok::Str(String::from_utf8_lossy(text).into_owned())
    }

    /// Digits and one point; backslash-newlines inside are dropped.
    fn number(&mut self) -> Tok {
        let mut text = String::new();
        let mut point = false;
        loop {
            match self.peek(0) {
                Some(c @ (b'0'..=b'9' | b'A'..=b'Z')) => text.push(c as char),
                Some(b'.') if !point => {
                    point = true;
                    text.push('.');
                }
                Some(b'\\') if self.peek(1) == Some(b'\n') => {
                    self.pos += 1;
                    self.line += 1;
                }
                _ => return Tok::Number(text),
            }
            self.pos += 1;
        }
    }

    fn word(&mut self) -> Tok {
        let start = self.pos;
        while matches!(self.peek(0), Some(b'a'..=b'z' | b'0'..=b'9' | b'_')) {
            self.pos += 1;
        }
        Tok::Word(String::from_utf8_lossy(&self.bytes[start..self.pos]).into_owned())
    }

    fn punct(&mut self) -> Tok {
        let rest = &self.bytes[self.pos..];
        if let Some(p) = PUNCTS.iter().find(|p| rest.starts_with(p.as_bytes())) {
            self.pos += p.len();
            return Tok::Punct(p);
        }
        // One whole character, for the message.
        let text = String::from_utf8_lossy(rest);
        let c = text.chars().next().unwrap_or('?');
        self.pos += c.len_utf8().min(rest.len());
        Tok::Bad(format!("illegal character: {c}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(source: &str) -> Vec<Tok> {
        tokenize(source).into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn tokens() {
        assert_eq!(
            toks("x+=1.5 /* c\n */ # d\n\"s\"A.\\\n8;."),
            vec![
                Tok::Word("x".into()),
                Tok::Punct("+="),
                Tok::Number("1.5".into()),
                Tok::Newline,
                Tok::Str("s".into()),
                Tok::Number("A.8".into()),
                Tok::Punct(";"),
                Tok::Word("last".into()),
                Tok::Eof,
            ]
        );
        assert_eq!(tokenize("/*\n\n*/ 1").last().unwrap().line, 3);
        assert!(matches!(toks("@")[0], Tok::Bad(_)));
    }
}
