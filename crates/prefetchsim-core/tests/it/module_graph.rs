//! No import circle among the core crate's modules: every `crate::…`, `super::…` and `self::…` path in
//! `src/` (parsed with `syn`, so comments, doc links and strings do not count; `#[cfg(test)]` items are
//! left out, as they are not part of the library) is an edge from the module holding it to the module it
//! names. The check runs at two grains: the top-level modules (`config`, `engine`, `policy`, …), and the
//! sibling files inside every top-level folder module (`engine/timed.rs` → `engine/replay.rs`;
//! the folder's own `mod.rs` is the parent, whose re-exports and shared items are not an import circle).
//! A call `Type::function` of an inherent impl counts as an import of the module the impl is in (an impl
//! may live far from its type: `Hierarchy::build` is in `build/`); method-call syntax and paths inside
//! macro bodies are not seen. Every cycle found is printed as a path through the modules, with one file
//! and line per edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A reference from one file to a module path (`crate`-relative segments).
struct Reference {
    target: Vec<String>,
    line: usize,
}

/// Collects the module paths a file names.
struct Collector<'a> {
    /// The file's module path (`["engine", "timed"]`; `[]` for `lib.rs`).
    module: &'a [String],
    refs: Vec<Reference>,
    /// Associated functions of inherent impls (`("Hierarchy", "build")`) and the module defining them.
    assoc: &'a Assoc,
}

/// `Type::function` of every inherent impl in `src/`, with the module the impl is in: an impl may sit
/// far from its type (`Hierarchy::build` is in `build/`), and a call through the type's name is an
/// import of that module all the same.
type Assoc = BTreeMap<(String, String), Vec<String>>;

/// Collect [`Assoc`] from one parsed file of module `module`.
fn collect_assoc(file: &syn::File, module: &[String], out: &mut Assoc) {
    struct Impls<'a>(&'a [String], &'a mut Assoc);
    impl<'ast> Visit<'ast> for Impls<'_> {
        fn visit_item(&mut self, i: &'ast syn::Item) {
            if let syn::Item::Mod(m) = i {
                if is_cfg_test(&m.attrs) {
                    return;
                }
            }
            syn::visit::visit_item(self, i);
        }

        fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
            if i.trait_.is_some() || is_cfg_test(&i.attrs) {
                return;
            }
            let syn::Type::Path(t) = &*i.self_ty else { return };
            let Some(ty) = t.path.segments.last() else { return };
            for item in &i.items {
                if let syn::ImplItem::Fn(f) = item {
                    self.1.insert((ty.ident.to_string(), f.sig.ident.to_string()), self.0.to_vec());
                }
            }
        }
    }
    Impls(module, out).visit_file(file);
}

impl Collector<'_> {
    /// Resolve a path's leading `crate` / `super` / `self` into crate-relative segments.
    fn resolve(&self, segs: &[String]) -> Option<Vec<String>> {
        let first = segs.first()?;
        match first.as_str() {
            "crate" => Some(segs[1..].to_vec()),
            "super" | "self" => {
                let mut base = self.module.to_vec();
                let mut rest = segs;
                while let Some(s) = rest.first() {
                    match s.as_str() {
                        "super" => {
                            base.pop()?;
                        }
                        "self" => {}
                        _ => break,
                    }
                    rest = &rest[1..];
                }
                base.extend(rest.iter().cloned());
                Some(base)
            }
            _ => None,
        }
    }

    fn add(&mut self, segs: &[String], line: usize) {
        if let Some(target) = self.resolve(segs) {
            if !target.is_empty() {
                self.refs.push(Reference { target, line });
            }
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, line: usize) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, line);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.add(prefix, line);
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.add(prefix, line);
                prefix.pop();
            }
            syn::UseTree::Glob(_) => self.add(prefix, line),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t, line);
                }
            }
        }
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.parse_args::<syn::Meta>().is_ok_and(|m| m.path().is_ident("test")))
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match i {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Impl(m) => &m.attrs,
            _ => &[],
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_item(self, i);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let line = u.use_token.span.start().line;
        self.use_tree(&mut Vec::new(), &u.tree, line);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        let line = p.segments.first().map_or(0, |s| s.ident.span().start().line);
        self.add(&segs, line);
        if let [.., ty, f] = segs.as_slice() {
            if let Some(target) = self.assoc.get(&(ty.clone(), f.clone())) {
                if !target.is_empty() {
                    self.refs.push(Reference { target: target.clone(), line });
                }
            }
        }
        syn::visit::visit_path(self, p);
    }
}

/// Every `.rs` file under `dir`, with its module path.
fn modules(src: &Path) -> Vec<(PathBuf, Vec<String>)> {
    fn walk(dir: &Path, src: &Path, out: &mut Vec<(PathBuf, Vec<String>)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).expect("read src").map(|e| e.expect("entry").path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, src, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(src).expect("under src").with_extension("");
                let mut segs: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
                if matches!(segs.last().map(String::as_str), Some("mod" | "lib")) {
                    segs.pop();
                }
                out.push((p, segs));
            }
        }
    }
    let mut out = Vec::new();
    walk(src, src, &mut out);
    out
}

/// An edge of the graph at one grain: the first place it is seen.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// The edges between top-level modules and between sibling files of every top-level folder module.
fn graphs(src: &Path) -> (Graph, BTreeMap<String, Graph>) {
    let files = modules(src);
    let mut folder_children: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (_, m) in files.iter().filter(|(_, m)| m.len() >= 2) {
        folder_children.entry(m[0].as_str()).or_default().insert(m[1].clone());
    }
    let mut top = Graph::new();
    let mut inner: BTreeMap<String, Graph> = BTreeMap::new();
    let parsed: Vec<syn::File> = files
        .iter()
        .map(|(path, _)| {
            let text = std::fs::read_to_string(path).expect("read source");
            syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .collect();
    let mut assoc = Assoc::new();
    for ((_, module), file) in files.iter().zip(&parsed) {
        collect_assoc(file, module, &mut assoc);
    }
    for ((path, module), file) in files.iter().zip(&parsed) {
        let mut c = Collector { module, refs: Vec::new(), assoc: &assoc };
        c.visit_file(file);
        let rel = path.strip_prefix(src).expect("under src").display().to_string();
        for r in c.refs {
            let at = format!("src/{rel}:{}", r.line);
            if let Some(from) = module.first() {
                if r.target[0] != *from {
                    top.entry(from.clone()).or_default().entry(r.target[0].clone()).or_insert(at.clone());
                }
            }
            // Sibling files of one folder module.
            if module.len() >= 2 && r.target.len() >= 2 && module[0] == r.target[0] && module[1] != r.target[1] {
                if let Some(kids) = folder_children.get(module[0].as_str()) {
                    if kids.contains(&r.target[1]) {
                        inner
                            .entry(module[0].clone())
                            .or_default()
                            .entry(module[1].clone())
                            .or_default()
                            .entry(r.target[1].clone())
                            .or_insert(at);
                    }
                }
            }
        }
    }
    (top, inner)
}

/// The strongly connected components of more than one node (Tarjan), each as one cycle through all its
/// nodes where possible, else a shortest cycle through its first node; with the place of each edge.
fn cycles(g: &Graph) -> Vec<String> {
    let nodes: BTreeSet<&String> = g.keys().chain(g.values().flat_map(BTreeMap::keys)).collect();
    let nodes: Vec<&String> = nodes.into_iter().collect();
    let idx: BTreeMap<&String, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let adj: Vec<Vec<usize>> =
        nodes.iter().map(|n| g.get(*n).map_or(Vec::new(), |m| m.keys().map(|k| idx[k]).collect())).collect();
    // Tarjan's algorithm, iterative.
    let n = nodes.len();
    let (mut index, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut sccs, mut next) = (Vec::new(), Vec::new(), 0);
    for s in 0..n {
        if index[s] != usize::MAX {
            continue;
        }
        let mut call = vec![(s, 0usize)];
        index[s] = next;
        low[s] = next;
        next += 1;
        stack.push(s);
        on[s] = true;
        while let Some(&mut (v, ref mut i)) = call.last_mut() {
            if *i < adj[v].len() {
                let w = adj[v][*i];
                *i += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on[w] = true;
                    call.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                call.pop();
                if let Some(&(u, _)) = call.last() {
                    low[u] = low[u].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut scc = Vec::new();
                    while let Some(w) = stack.pop() {
                        on[w] = false;
                        scc.push(w);
                        if w == v {
                            break;
                        }
                    }
                    if scc.len() > 1 {
                        sccs.push(scc);
                    }
                }
            }
        }
    }
    sccs.into_iter()
        .map(|scc| {
            let members: BTreeSet<usize> = scc.iter().copied().collect();
            let start = *members.iter().next().expect("non-empty");
            // Shortest cycle through `start` inside the component (breadth-first search back to it).
            let mut prev = vec![usize::MAX; n];
            let mut queue = std::collections::VecDeque::from([start]);
            let mut found = None;
            'bfs: while let Some(v) = queue.pop_front() {
                for &w in &adj[v] {
                    if !members.contains(&w) {
                        continue;
                    }
                    if w == start {
                        found = Some(v);
                        break 'bfs;
                    }
                    if prev[w] == usize::MAX {
                        prev[w] = v;
                        queue.push_back(w);
                    }
                }
            }
            let mut path = vec![start];
            let mut v = found.expect("a component has a cycle through each node");
            while v != start {
                path.push(v);
                v = prev[v];
            }
            path[1..].reverse();
            path.push(start);
            let steps: Vec<String> = path
                .windows(2)
                .map(|w| format!("{} -> {} ({})", nodes[w[0]], nodes[w[1]], g[nodes[w[0]]][nodes[w[1]]]))
                .collect();
            let names: Vec<&str> = members.iter().map(|&i| nodes[i].as_str()).collect();
            let inside: Vec<String> = members
                .iter()
                .flat_map(|&v| adj[v].iter().filter(|w| members.contains(w)).map(move |&w| (v, w)))
                .map(|(v, w)| format!("{} -> {} ({})", nodes[v], nodes[w], g[nodes[v]][nodes[w]]))
                .collect();
            format!(
                "circle among {{{}}}:\n    {}\n  all edges inside it:\n    {}",
                names.join(", "),
                steps.join("\n    "),
                inside.join("\n    ")
            )
        })
        .collect()
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_import_circle_among_the_core_crates_modules() {
    let (top, inner) = graphs(&src_dir());
    let mut found = cycles(&top);
    for (folder, g) in &inner {
        found.extend(cycles(g).into_iter().map(|c| format!("[{folder}/] {c}")));
    }
    assert!(found.is_empty(), "{} import circle(s):\n{}", found.len(), found.join("\n"));
}

#[test]
fn the_circle_finder_finds_a_planted_circle_and_nothing_in_a_chain() {
    let edge = |a: &str, b: &str| (a.to_string(), BTreeMap::from([(b.to_string(), format!("{a}.rs:1"))]));
    let chain: Graph = [edge("a", "b"), edge("b", "c")].into_iter().collect();
    assert!(cycles(&chain).is_empty());
    let circle: Graph = [edge("a", "b"), edge("b", "c"), edge("c", "a")].into_iter().collect();
    let found = cycles(&circle);
    assert_eq!(found.len(), 1);
    assert!(found[0].contains("a -> b (a.rs:1)") && found[0].contains("c -> a (c.rs:1)"), "{}", found[0]);
}
