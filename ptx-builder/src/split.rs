//! A PTX module's top level, by name: its kernels, and one module per kernel, so that a
//! driver JIT-compiles only the kernels a process uses.
//!
//! A driver compiles a PTX module whole when it is loaded: for `blocktri`'s ~220 kernels
//! (15 MB) that took ~60 s on a fresh H200 machine. A kernel's own module
//! ([`PtxIndex::kernel_module`]) is the PTX header, the kernel, and the top-level items
//! (device functions, their prototypes, module-scope variables) it names, directly or
//! through those items, in their original order. The builder takes its list of kernels
//! from here too ([`entry_names`]), so the kernels it embeds and the ones the index cuts
//! are found by one parser.
//!
//! ```
//! use blocktri_ptx::split::PtxIndex;
//! let ptx = ".version 7.8\n.target sm_80\n.address_size 64\n\
//!            .func helper()\n{\n\tret;\n}\n\
//!            .visible .entry k1()\n{\n\tcall.uni helper, ();\n\tret;\n}\n\
//!            .visible .entry k2()\n{\n\tret;\n}\n";
//! let index = PtxIndex::parse(ptx).expect("LLVM's form of PTX");
//! assert_eq!(index.entries().collect::<Vec<_>>(), ["k1", "k2"]);
//! let k1 = index.kernel_module("k1").unwrap();
//! assert!(k1.contains(".func helper()") && !k1.contains("k2"));
//! ```
//!
//! The parser knows the top level of PTX as LLVM's NVPTX back end writes it: directives
//! (`.version`, `.target`, `.address_size`), declarations ending in `;` at brace depth 0,
//! and function definitions ending with the `}` that closes their body. Anything else makes
//! [`PtxIndex::parse`] return `None`, and the caller loads the module whole.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

/// The top-level items of a PTX module, by name. It borrows the PTX (an embedded PTX is
/// not copied).
///
/// ```
/// use blocktri_ptx::split::PtxIndex;
/// let ptx = ".version 7.8\n.target sm_80\n.visible .entry k()\n{\n\tret;\n}\n";
/// let index = PtxIndex::parse(ptx).unwrap();
/// assert_eq!(index.entry_len("k"), Some(".visible .entry k()\n{\n\tret;\n}\n".len()));
/// ```
pub struct PtxIndex<'a> {
    text: &'a str,
    /// `.version`, `.target`, `.address_size` lines (byte ranges of `text`).
    header: Vec<Range<usize>>,
    items: Vec<Item>,
    /// Item indices by name (a prototype and a definition share a name).
    by_name: HashMap<String, Vec<usize>>,
}

struct Item {
    name: String,
    span: Range<usize>,
    entry: bool,
}

impl std::fmt::Debug for PtxIndex<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PtxIndex").field("bytes", &self.text.len()).field("items", &self.items.len()).finish()
    }
}

/// The part of a line before a `//` comment (PTX has no string literals).
fn code(line: &str) -> &str {
    line.find("//").map_or(line, |i| &line[..i])
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// The identifiers of `text` outside comments (`%rd1` gives `rd1`, harmless: item names
/// never start with `%`).
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.lines().flat_map(|l| code(l).split(|c: char| !is_ident_char(c)).filter(|t| !t.is_empty()))
}

/// The name an item declares, and whether it is a function and an entry. `head` is the
/// item's code up to its body.
fn item_name(head: &str) -> Option<(String, bool, bool)> {
    let mut rest = head.trim_start();
    let mut function = false;
    let mut entry = false;
    // Leading directives: linkage and kind (`.visible .entry`, `.weak .func`, `.extern
    // .shared .align 16 .b8`...).
    while let Some(r) = rest.strip_prefix('.') {
        let word: String = r.chars().take_while(|c| is_ident_char(*c)).collect();
        rest = r[word.len()..].trim_start();
        match word.as_str() {
            "func" => function = true,
            "entry" => {
                function = true;
                entry = true;
            }
            _ => {}
        }
        if function {
            break;
        }
        // A variable: its alignment is a number after `.align`.
        if word == "align" {
            rest = rest.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start();
        }
    }
    if function {
        // A return parameter list comes before the name: `.func (.param .b32 r) name(`.
        if rest.starts_with('(') {
            let close = rest.find(')')?;
            rest = rest[close + 1..].trim_start();
        }
    }
    let name: String = rest.chars().take_while(|c| is_ident_char(*c)).collect();
    (!name.is_empty()).then_some((name, function, entry))
}

/// The kernels (`.entry`, any linkage) of any PTX module, in module order, without
/// indexing it; comments are ignored.
///
/// ```
/// let ptx = ".version 7.8\n// .visible .entry not_this()\n.visible .entry saxpy(\n\t.param .u64 a\n)\n\
///            .func helper()\n.weak .entry k2_f64(\n";
/// assert_eq!(blocktri_ptx::split::entry_names(ptx), ["saxpy", "k2_f64"]);
/// ```
pub fn entry_names(ptx: &str) -> Vec<String> {
    ptx.lines().filter_map(entry_name).collect()
}

/// The kernel (`.entry`, any linkage) whose declaration `line` starts, if any; a comment
/// is not code. The one reading of a kernel's name for [`entry_names`] and
/// [`crate::cap_registers`].
pub(crate) fn entry_name(line: &str) -> Option<String> {
    item_name(code(line)).filter(|(_, _, entry)| *entry).map(|(name, _, _)| name)
}

impl<'a> PtxIndex<'a> {
    /// Indexes `ptx`, or `None` when its top level is not the form described in the module
    /// docs (the caller then loads it whole).
    ///
    /// ```
    /// use blocktri_ptx::split::PtxIndex;
    /// assert!(PtxIndex::parse(".version 7.8\n.target sm_80\n.visible .entry k()\n{\n}\n").is_some());
    /// assert!(PtxIndex::parse(".version 7.8\n.target sm_80\n.visible .entry k()\n{\n").is_none(), "unclosed");
    /// ```
    pub fn parse(ptx: &'a str) -> Option<Self> {
        let mut header = Vec::new();
        let mut items = Vec::new();
        // The item being read: start offset, head (code up to the body), whether it has a
        // body, brace depth.
        let mut open: Option<(usize, String, bool, i32)> = None;
        let mut offset = 0;
        for line in ptx.split_inclusive('\n') {
            let start = offset;
            offset += line.len();
            let c = code(line);
            if open.is_none() {
                let t = c.trim();
                if t.is_empty() {
                    continue;
                }
                if t.starts_with(".version") || t.starts_with(".target") || t.starts_with(".address_size") {
                    header.push(start..offset);
                    continue;
                }
                open = Some((start, String::new(), false, 0));
            }
            let (item_start, head, body, depth) = open.as_mut()?;
            // Most lines are inside a body and hold no brace: nothing to do.
            if *body && !c.contains(['{', '}']) {
                continue;
            }
            let mut done = false;
            for ch in c.chars() {
                if done {
                    if !ch.is_whitespace() {
                        return None; // two items on one line
                    }
                    continue;
                }
                match ch {
                    '{' => {
                        // A function body opens at depth 0; a variable's initializer too,
                        // but it ends with `;`, not with its `}`.
                        if *depth == 0 && item_name(head).is_some_and(|(_, f, _)| f) {
                            *body = true;
                        }
                        *depth += 1;
                    }
                    '}' => {
                        *depth -= 1;
                        if *depth < 0 {
                            return None;
                        }
                        done = *depth == 0 && *body;
                    }
                    ';' if *depth == 0 => done = true,
                    _ if *depth == 0 && !*body => head.push(ch),
                    _ => {}
                }
            }
            if !*body && *depth == 0 {
                head.push(' ');
            }
            if done {
                let (name, _, entry) = item_name(head)?;
                items.push(Item { name, span: *item_start..offset, entry });
                open = None;
            }
        }
        if open.is_some() || header.is_empty() || !items.iter().any(|i| i.entry) {
            return None;
        }
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, item) in items.iter().enumerate() {
            by_name.entry(item.name.clone()).or_default().push(i);
        }
        // Two entries of one name, or an entry sharing its name with another item, would
        // make the cut ambiguous.
        if items.iter().any(|i| i.entry && by_name[&i.name].len() != 1) {
            return None;
        }
        Some(PtxIndex { text: ptx, header, items, by_name })
    }

    /// The names of the module's kernels (`.entry`), in module order.
    ///
    /// ```
    /// use blocktri_ptx::split::PtxIndex;
    /// let ptx = ".version 7.8\n.target sm_80\n.visible .entry b()\n{\n}\n.visible .entry a()\n{\n}\n";
    /// assert_eq!(PtxIndex::parse(ptx).unwrap().entries().collect::<Vec<_>>(), ["b", "a"]);
    /// ```
    pub fn entries(&self) -> impl Iterator<Item = &str> {
        self.items.iter().filter(|i| i.entry).map(|i| i.name.as_str())
    }

    /// Bytes of the kernel's own text (not counting what it names): a size to order by.
    pub fn entry_len(&self, name: &str) -> Option<usize> {
        let &[i] = self.by_name.get(name)?.as_slice() else { return None };
        self.items[i].entry.then(|| self.items[i].span.len())
    }

    /// A PTX module with the header, kernel `name` and every item it needs; `None` when
    /// the module has no such kernel.
    ///
    /// ```
    /// use blocktri_ptx::split::PtxIndex;
    /// let ptx = ".version 7.8\n.target sm_80\n.global .b32 table;\n.global .b32 other;\n\
    ///            .visible .entry k()\n{\n\tld.global.u32 %r1, [table];\n}\n";
    /// let k = PtxIndex::parse(ptx).unwrap().kernel_module("k").unwrap();
    /// assert_eq!(k, ".version 7.8\n.target sm_80\n\n.global .b32 table;\n.visible .entry k()\n{\n\tld.global.u32 %r1, [table];\n}\n");
    /// ```
    pub fn kernel_module(&self, name: &str) -> Option<String> {
        let &[root] = self.by_name.get(name)?.as_slice() else { return None };
        if !self.items[root].entry {
            return None;
        }
        // Items named by what is kept, transitively.
        let mut keep: HashSet<usize> = HashSet::from([root]);
        let mut todo = vec![root];
        while let Some(i) = todo.pop() {
            for ident in identifiers(&self.text[self.items[i].span.clone()]) {
                for &j in self.by_name.get(ident).map_or(&[][..], Vec::as_slice) {
                    if !self.items[j].entry && keep.insert(j) {
                        todo.push(j);
                    }
                }
            }
        }
        let mut out = String::new();
        for r in &self.header {
            out.push_str(&self.text[r.clone()]);
        }
        out.push('\n');
        for (i, item) in self.items.iter().enumerate() {
            if keep.contains(&i) {
                out.push_str(&self.text[item.span.clone()]);
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
        Some(out)
    }

    /// Whether the module declares or defines an item (function, prototype, variable,
    /// kernel) called `name`.
    ///
    /// ```
    /// use blocktri_ptx::split::PtxIndex;
    /// let ptx = ".version 7.8\n.target sm_80\n.global .b32 table;\n.visible .entry k()\n{\n\tret;\n}\n";
    /// let index = PtxIndex::parse(ptx).unwrap();
    /// assert!(index.declares("table") && index.declares("k") && !index.declares("other"));
    /// ```
    pub fn declares(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The names of this module's items other than kernels that `text` mentions outside
    /// comments (with repeats): what a module cut from this one must declare when it
    /// holds `text`.
    ///
    /// ```
    /// use blocktri_ptx::split::PtxIndex;
    /// let ptx = ".version 7.8\n.target sm_80\n.global .b32 table;\n.func f()\n{\n\tret;\n}\n\
    ///            .visible .entry k()\n{\n\tret;\n}\n";
    /// let index = PtxIndex::parse(ptx).unwrap();
    /// let used: Vec<_> = index.items_named_in("call.uni f, (); // table\nmov.u32 %r1, k;").collect();
    /// assert_eq!(used, ["f"]);
    /// ```
    pub fn items_named_in<'t>(&'t self, text: &'t str) -> impl Iterator<Item = &'t str> {
        identifiers(text).filter(|ident| self.by_name.get(*ident).is_some_and(|ix| ix.iter().any(|&i| !self.items[i].entry)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version 7.8\n.target sm_80\n.address_size 64\n\n\
\t// .globl\tk1 // -- Begin function k1\n\
.func helper\n(\n\t.param .b64 helper_param_0\n)\n;\n\
.func (.param .b32 func_retval0) unused_fn\n(\n)\n;\n\
.extern .shared .align 16 .b8 smem[];\n\
.global .align 4 .b8 table[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n\
                                        // @k1\n\
.visible .entry k1(\n\t.param .u64 k1_param_0\n)\n.maxnreg 64\n{\n\t.reg .b64 %rd<3>;\n\
\t{ // callseq 0, 0\n\tcall.uni helper, (%rd1);\n\t} // callseq 0\n\tret;\n}\n\
.visible .entry k2(\n)\n{\n\tmov.u64 %rd1, smem;\n\tret;\n}\n\
.func helper(\n\t.param .b64 helper_param_0\n)\n{\n\tmov.u64 %rd1, table;\n\tret;\n}\n\
.func (.param .b32 func_retval0) unused_fn()\n{\n\tret;\n}\n";

    #[test]
    fn indexes_entries_functions_and_variables() {
        let ix = PtxIndex::parse(PTX).expect("parses");
        assert_eq!(ix.entries().collect::<Vec<_>>(), ["k1", "k2"]);
        assert_eq!(entry_names(PTX), ["k1", "k2"]);
        let names: Vec<_> = ix.items.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["helper", "unused_fn", "smem", "table", "k1", "k2", "helper", "unused_fn"]);
    }

    #[test]
    fn a_kernel_module_holds_what_the_kernel_names_transitively() {
        let ix = PtxIndex::parse(PTX).unwrap();
        let k1 = ix.kernel_module("k1").unwrap();
        assert!(k1.starts_with(".version 7.8\n.target sm_80\n.address_size 64\n"));
        // k1 calls helper (prototype and definition), which reads table.
        assert_eq!(k1.matches(".func helper").count(), 2);
        assert!(k1.contains(".global .align 4 .b8 table[8] = {1, 2, 3, 4, 5, 6, 7, 8};"));
        assert!(k1.contains(".maxnreg 64"));
        assert!(!k1.contains("unused_fn") && !k1.contains("smem") && !k1.contains("entry k2"));
        // Prototype before definition, as in the module.
        assert!(k1.find("helper\n(").unwrap() < k1.find("k1(").unwrap());
        let k2 = ix.kernel_module("k2").unwrap();
        assert!(k2.contains(".extern .shared .align 16 .b8 smem[];"));
        assert!(!k2.contains("helper") && !k2.contains("table") && !k2.contains("entry k1"));
        assert_eq!(ix.kernel_module("helper"), None);
        assert_eq!(ix.kernel_module("k3"), None);
    }

    #[test]
    fn unknown_forms_are_refused() {
        assert!(PtxIndex::parse(".version 7.8\n.target sm_80\n").is_none(), "no entry");
        assert!(PtxIndex::parse(".version 7.8\n.target sm_80\n.visible .entry k(\n)\n{\n").is_none(), "unclosed");
        assert!(PtxIndex::parse(".version 7.8\n.target sm_80\n.visible .entry k()\n{\n}}\n").is_none(), "unbalanced");
        let twice = ".version 7.8\n.target sm_80\n.visible .entry k()\n{\n}\n.visible .entry k()\n{\n}\n";
        assert!(PtxIndex::parse(twice).is_none(), "two entries of one name");
    }
}
