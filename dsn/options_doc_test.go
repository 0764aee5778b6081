package dsn

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"text/tabwriter"
)

// update makes TestOptionsDoc rewrite the table instead of comparing it: "go
// generate ./dsn" runs it so (see options.go).
var update = flag.Bool("update", false, "TestOptionsDoc: rewrite the Options table in doc.go from options")

// optionsDoc renders the option table as the Options section of doc.go shows
// it: one row per key (an alias after its option), with the lines of a Go doc
// comment's code block.
func optionsDoc() []string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "key\ttype\tunit\tdefault\tmeaning\tfrom")
	orDash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, o := range options {
		def := o.defDoc
		if def == "" {
			def = o.kind.format(o.def, false)
		}
		if def == "" {
			def = `""`
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", o.key, o.kind.doc, orDash(o.unit), def, o.meaning, orDash(o.from))
		for _, a := range o.aliases {
			fmt.Fprintf(w, "%s\talias\t\t\tof %s\t%s\n", a.key, o.key, a.from)
		}
	}
	w.Flush()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for i, l := range lines {
		lines[i] = "//\t" + strings.TrimRight(l, " ")
	}
	return lines
}

// docTable finds the Options table in doc, the lines of doc.go: from its
// header line ("//\tkey  type ...", the first after "// # Options") to the
// end of that code block (the next "//" line), end excluded. A Go doc comment
// cannot hold marker lines that godoc hides (gofmt moves directives to the
// comment's end), so the header and the block's end are the markers.
func docTable(doc []string) (start, end int, ok bool) {
	start = -1
	for i, l := range doc {
		switch {
		case l == "// # Options" && start < 0:
			start = -2
		case start == -2 && strings.HasPrefix(l, "//\tkey "):
			start = i
		case start >= 0 && l == "//":
			return start, i, true
		}
	}
	return 0, 0, false
}

// TestOptionsDoc: doc.go's Options table is the one optionsDoc renders from
// the option table; with -update (go generate ./dsn) it rewrites it.
func TestOptionsDoc(t *testing.T) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Split(string(b), "\n")
	start, end, ok := docTable(doc)
	if !ok {
		t.Fatal(`doc.go: no Options table: want a code block starting "//\tkey " after "// # Options"`)
	}
	table := optionsDoc()
	if strings.Join(doc[start:end], "\n") == strings.Join(table, "\n") {
		return
	}
	if !*update {
		t.Fatalf("doc.go: the Options table is stale (options.go changed): run go generate ./dsn\nwant:\n%s", strings.Join(table, "\n"))
	}
	out := append(append(append([]string{}, doc[:start]...), table...), doc[end:]...)
	if err := os.WriteFile("doc.go", []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}
