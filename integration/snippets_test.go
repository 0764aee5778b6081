package integration

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// snippetPackages are the names a snippet may use as a package without importing it
// (as a reader of the docs would write the import), by the name it is used under.
var snippetPackages = map[string]string{
	"context": "context", "errors": "errors", "expvar": "expvar", "fmt": "fmt", "http": "net/http", "log": "log",
	"net": "net", "os": "os", "slog": "log/slog", "sql": "database/sql", "sync": "sync", "testing": "testing", "time": "time",

	"mysqlfailover":       "github.com/mysqlfailover/mysqlfailover",
	"dsn":                 "github.com/mysqlfailover/mysqlfailover/dsn",
	"failover":            "github.com/mysqlfailover/mysqlfailover/failover",
	"mysqlfailoverexpvar": "github.com/mysqlfailover/mysqlfailover/metrics/expvar",
	"mysqlfailoverprom":   "github.com/mysqlfailover/mysqlfailover/metrics/prometheus",
	"mysqlfailoverotel":   "github.com/mysqlfailover/mysqlfailover/metrics/otel",
	"failovertest":        "github.com/mysqlfailover/mysqlfailover/integration/failovertest",
	"mysql":               "github.com/go-sql-driver/mysql",
	"prometheus":          "github.com/prometheus/client_golang/prometheus",
	"promhttp":            "github.com/prometheus/client_golang/prometheus/promhttp",
	"otel":                "go.opentelemetry.io/otel",
	"gorm":                "gorm.io/gorm",
	"gormmysql":           "gorm.io/driver/mysql",
	"sqlx":                "github.com/jmoiron/sqlx",
	"entsql":              "entgo.io/ent/dialect/sql",
	"dialect":             "entgo.io/ent/dialect",
	"goose":               "github.com/pressly/goose/v3",
	"otelsql":             "github.com/XSAM/otelsql",
}

// snippetFree are the names the snippets leave to the reader (their own variables and
// functions), with their types and the imports those need. A snippet that uses a name
// it neither declares nor finds here does not compile, which is the point.
var snippetFree = map[string]struct{ typ, imports string }{
	"ctx":           {"context.Context", "context"},
	"db":            {"*sql.DB", "database/sql"},
	"sqlConn":       {"*sql.Conn", "database/sql"},
	"cfg":           {"*dsn.Config", "github.com/mysqlfailover/mysqlfailover/dsn"},
	"c":             {"*mysqlfailover.Connector", "github.com/mysqlfailover/mysqlfailover"},
	"err":           {"error", ""},
	"dsn":           {"string", ""},
	"myHook":        {"func(failover.Event)", "github.com/mysqlfailover/mysqlfailover/failover"},
	"r":             {"*http.Request", "net/http"},
	"id":            {"int64", ""},
	"customerID":    {"string", ""},
	"sshClient":     {"interface{ DialContext(context.Context, string, string) (net.Conn, error) }", "context net"},
	"runCheckout":   {"func(context.Context, *sql.DB)", "context database/sql"},
	"meterProvider": {"interface{ metric.MeterProvider }", "go.opentelemetry.io/otel/metric"},
}

// looksLikeGo reports whether a code block that did not parse was meant as Go (then it
// is a broken snippet, not a table, a DSN or a log line).
var looksLikeGo = regexp.MustCompile(`:=|(?m)^\s*func \w*\(|(?m)^\s*import [("\w]|(?m)^\s*(if|for|switch) .*\{\s*$|\w\.[A-Z]\w*\(`)

// snippet is one block of code in the documentation.
type snippet struct {
	where string // file:block for messages
	code  string
	isGo  bool // a ```go fence: it must compile
}

// TestSnippetsCompile compiles every Go snippet of the documentation users copy from:
// the root README's ```go blocks and the code blocks of the package documentation of the
// public packages (the driver, dsn, failover, the three metrics packages, failovertest),
// each as a package of one temporary user module, built by one `go build ./...`. README's
// blocks are read from README.md itself, so they cannot drift; a block of README without
// a language that looks like Go fails the test (mark it ```go and it is compiled). The
// module's go.mod is README's Install block, paths replaced by this checkout's, so the
// block is checked too: `go mod tidy` and `go list -m all` must work with its replace
// lines alone (the integration module requires both metrics modules: without their
// replace lines the proxy answers 403). A snippet may use the packages of
// snippetPackages without importing them and the reader's own names of snippetFree;
// whatever else it needs it must declare. A variable a snippet declares at its top level
// counts as used by the reader's next step, except err: a snippet pasted into a function
// must check its errors (else Go says "declared and not used: err"). It skips with
// -short.
func TestSnippetsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a module of its own")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	_, file, _, _ := runtime.Caller(0)
	integ := filepath.Dir(file)
	root := filepath.Dir(integ)

	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	must(t, err)
	snips, goMod, unmarked := readmeSnippets(string(readme))
	if goMod == "" {
		t.Fatal("README.md has no go.mod block (replace lines for a user module)")
	}
	for _, u := range unmarked {
		if looksLikeGo.MatchString(u.code) {
			t.Errorf("%s: a block without a language that looks like Go: mark it ```go (then it is compiled):\n%s", u.where, u.code)
		}
	}
	for _, dir := range []string{".", "dsn", "failover", "metrics/expvar", "metrics/prometheus", "metrics/otel", "integration/failovertest"} {
		snips = append(snips, docSnippets(t, filepath.Join(root, dir), dir)...)
	}

	dir := t.TempDir()
	mod := "module example.com/snippets\n\ngo 1.26.0\n\n" + strings.ReplaceAll(goMod, "/path/to/mysqlfailover", root) + "\n"
	must(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644))
	sum, err := os.ReadFile(filepath.Join(integ, "go.sum"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
	built := map[string]string{} // package dir -> where
	for i, s := range snips {
		src, ok, err := renderSnippet(s)
		if err != nil {
			t.Errorf("%s: %v\n%s", s.where, err, s.code)
			continue
		}
		if !ok {
			continue // not Go: a table, a DSN, a log line
		}
		pkg := fmt.Sprintf("s%02d", i)
		must(t, os.MkdirAll(filepath.Join(dir, pkg), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, pkg, "snippet.go"), []byte(src), 0o644))
		built[pkg] = s.where
	}
	if len(built) < 10 {
		t.Fatalf("only %d Go snippets found: the extraction is broken", len(built))
	}
	run := func(args ...string) (string, error) {
		begin := time.Now()
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		t.Logf("go %s: %v", strings.Join(args, " "), time.Since(begin).Round(time.Millisecond))
		return string(out), err
	}
	begin := time.Now()
	if out, err := run("mod", "tidy"); err != nil {
		t.Fatalf("go mod tidy of a module with README's go.mod block: %v\n%s\ngo.mod:\n%s", err, out, mod)
	}
	if out, err := run("list", "-m", "all"); err != nil {
		t.Fatalf("go list -m all with README's replace lines (is one missing?): %v\n%s", err, out)
	}
	if out, err := run("build", "./..."); err != nil {
		// Name each failing snippet by where it lives.
		for pkg, where := range built {
			out = strings.ReplaceAll(out, "./"+pkg+"/snippet.go", where)
			out = strings.ReplaceAll(out, "example.com/snippets/"+pkg, where)
		}
		t.Fatalf("snippets that do not compile as shown:\n%s", out)
	}
	var names []string
	for _, w := range built {
		names = append(names, w)
	}
	sort.Strings(names)
	t.Logf("FIGURE %s: snippets=%d seconds=%.1f", t.Name(), len(built), time.Since(begin).Seconds())
	t.Logf("compiled: %s", strings.Join(names, ", "))
}

// readmeSnippets returns README's ```go blocks, its go.mod block (the one with the
// replace lines) and its other blocks without a language.
func readmeSnippets(text string) (snips []snippet, goMod string, unmarked []snippet) {
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		lang, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		start := i
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			body = append(body, lines[i])
		}
		code := strings.Join(body, "\n")
		where := fmt.Sprintf("README.md:%d", start+1)
		switch {
		case lang == "go":
			snips = append(snips, snippet{where: where, code: code, isGo: true})
		case strings.Contains(code, "github.com/mysqlfailover/mysqlfailover =>"):
			goMod = code
		case lang == "":
			unmarked = append(unmarked, snippet{where: where, code: code})
		}
	}
	return snips, goMod, unmarked
}

// docSnippets returns the code blocks of the documentation of the package in dir: the
// package's and its exported declarations'.
func docSnippets(t *testing.T, dir, name string) []snippet {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	must(t, err)
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		must(t, err)
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "example.com/"+name)
	must(t, err)
	type text struct{ where, doc string }
	texts := []text{{"package doc", p.Doc}}
	addFuncs := func(fs []*doc.Func) {
		for _, f := range fs {
			texts = append(texts, text{f.Name, f.Doc})
		}
	}
	addValues := func(vs []*doc.Value) {
		for _, v := range vs {
			texts = append(texts, text{strings.Join(v.Names, ","), v.Doc})
		}
	}
	addFuncs(p.Funcs)
	addValues(p.Consts)
	addValues(p.Vars)
	for _, ty := range p.Types {
		texts = append(texts, text{ty.Name, ty.Doc})
		addFuncs(ty.Funcs)
		addFuncs(ty.Methods)
		addValues(ty.Consts)
		addValues(ty.Vars)
	}
	var out []snippet
	for _, tx := range texts {
		for k, block := range p.Parser().Parse(tx.doc).Content {
			if c, ok := block.(*comment.Code); ok {
				out = append(out, snippet{where: fmt.Sprintf("%s (%s, block %d)", name, tx.where, k), code: c.Text})
			}
		}
	}
	return out
}

// renderSnippet makes the Go file of s: its leading import lines at the top, then its
// declarations as they are, or its statements as the body of a function (returning
// error, so that `return err` works), followed by a use of each variable it declares at
// its top level (a snippet shows a step, its results used by the reader's next one); the
// imports of the packages it names, and the reader's names it uses (snippetFree) as
// package variables. ok is false for a block that is not Go; err says why a block meant
// as Go does not parse.
func renderSnippet(s snippet) (src string, ok bool, err error) {
	lines := strings.Split(s.code, "\n")
	var imports, rest []string
	inBlock := false
	for i, l := range lines {
		tl := strings.TrimSpace(l)
		switch {
		case inBlock:
			imports = append(imports, l)
			inBlock = tl != ")"
		case strings.HasPrefix(tl, "import ("):
			imports, inBlock = append(imports, l), true
		case strings.HasPrefix(tl, "import "):
			imports = append(imports, l)
		case tl == "" && len(rest) == 0:
		default:
			rest = lines[i:]
		}
		if rest != nil {
			break
		}
	}
	body := strings.Join(rest, "\n")
	head := "package snippet\n\n" + strings.Join(imports, "\n") + "\n"
	fset := token.NewFileSet()
	asFile := head + body + "\n"
	f, ferr := parser.ParseFile(fset, "snippet.go", asFile, 0)
	fileMode := ferr == nil && len(f.Decls) > len(importDecls(f))
	if !fileMode {
		asFunc := head + "func snippet() error {\n" + body + "\nreturn nil\n}\n"
		f, err = parser.ParseFile(fset, "snippet.go", asFunc, 0)
		if err != nil {
			if s.isGo || looksLikeGo.MatchString(s.code) {
				return "", false, fmt.Errorf("does not parse as Go: %v", err)
			}
			return "", false, nil
		}
	}

	used, defined, pkgs := map[string]bool{}, map[string]bool{}, map[string]bool{}
	imported := map[string]bool{}
	for _, is := range f.Imports {
		p := strings.Trim(is.Path.Value, `"`)
		imported[p] = true
		n := p[strings.LastIndex(p, "/")+1:]
		if is.Name != nil {
			n = is.Name.Name
		}
		defined[n] = true
	}
	var topLevel []string // variables the function body declares at its top level
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok {
				pkgs[id.Name] = true
				used[id.Name] = true
			}
			ast.Inspect(x.X, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					used[id.Name] = true
				}
				return true
			})
			return false
		case *ast.KeyValueExpr:
			ast.Inspect(x.Value, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					used[id.Name] = true
				}
				return true
			})
			return true
		case *ast.AssignStmt:
			if x.Tok == token.DEFINE {
				for _, l := range x.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						defined[id.Name] = true
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range x.Names {
				defined[id.Name] = true
			}
		case *ast.Field:
			for _, id := range x.Names {
				defined[id.Name] = true
			}
		case *ast.FuncDecl:
			defined[x.Name.Name] = true
		case *ast.TypeSpec:
			defined[x.Name.Name] = true
		case *ast.Ident:
			used[x.Name] = true
		}
		return true
	})
	if !fileMode {
		fn := f.Decls[len(f.Decls)-1].(*ast.FuncDecl)
		for _, st := range fn.Body.List {
			switch x := st.(type) {
			case *ast.AssignStmt:
				if x.Tok == token.DEFINE {
					for _, l := range x.Lhs {
						if id, ok := l.(*ast.Ident); ok && id.Name != "_" && id.Name != "err" {
							topLevel = append(topLevel, id.Name)
						}
					}
				}
			case *ast.DeclStmt:
				if g, ok := x.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
					for _, sp := range g.Specs {
						for _, id := range sp.(*ast.ValueSpec).Names {
							topLevel = append(topLevel, id.Name)
						}
					}
				}
			}
		}
	}

	var add []string
	need := func(paths string) {
		for _, p := range strings.Fields(paths) {
			if !imported[p] {
				imported[p] = true
				name := p[strings.LastIndex(p, "/")+1:]
				for n, path := range snippetPackages {
					if path == p {
						name = n // the name the snippets use it under (entsql, gormmysql)
					}
				}
				add = append(add, "import "+name+` "`+p+`"`)
			}
		}
	}
	var free []string
	for name := range used {
		asPackage := pkgs[name] && snippetPackages[name] != "" // dsn.Parse: the package, not the reader's dsn string
		if fr, ok := snippetFree[name]; ok && !defined[name] && !asPackage {
			free = append(free, name)
			need(fr.imports)
		}
	}
	for name := range pkgs {
		if p, ok := snippetPackages[name]; ok && !defined[name] && !slices.Contains(free, name) {
			need(p)
		}
	}
	sort.Strings(free)
	sort.Strings(add)
	var b strings.Builder
	b.WriteString("// Code extracted from " + s.where + ".\n\n")
	b.WriteString(head)
	b.WriteString(strings.Join(add, "\n") + "\n\n")
	for _, name := range free {
		fmt.Fprintf(&b, "var %s %s\n", name, snippetFree[name].typ)
	}
	if fileMode {
		b.WriteString("\n" + body + "\n")
	} else {
		b.WriteString("\nfunc snippet() error {\n" + body + "\n")
		for _, v := range topLevel {
			fmt.Fprintf(&b, "\t_ = %s\n", v)
		}
		b.WriteString("\treturn nil\n}\n")
	}
	return b.String(), true, nil
}

func importDecls(f *ast.File) []ast.Decl {
	var out []ast.Decl
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			out = append(out, d)
		}
	}
	return out
}
