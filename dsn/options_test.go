package dsn

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// knownTarget reports whether t is one of targets.
func knownTarget(t string) bool { return slices.Contains(targets, t) }

// TestOptionsTable: every Config field but Hosts and MySQL is the field of
// exactly one option, whose default has the field's type and comes back from
// FormatDSN's text; keys and aliases are distinct, under case folding too.
func TestOptionsTable(t *testing.T) {
	ct := reflect.TypeFor[Config]()
	fields := map[string]bool{}
	for i := range ct.NumField() {
		if f := ct.Field(i); f.Name != "Hosts" && f.Name != "MySQL" {
			fields[f.Name] = true
		}
	}
	keys := map[string]bool{}
	for _, k := range allKeys() {
		if keys[strings.ToLower(k)] {
			t.Errorf("key %q twice (under case folding)", k)
		}
		keys[strings.ToLower(k)] = true
	}
	for i := range options {
		o := &options[i]
		f, ok := ct.FieldByName(o.field)
		if !ok || !fields[o.field] {
			t.Errorf("%s: field %q is not a Config field, or has two options", o.key, o.field)
			continue
		}
		delete(fields, o.field)
		if reflect.TypeOf(o.def) != f.Type {
			t.Errorf("%s: default %#v is a %T, field %s a %v", o.key, o.def, o.def, o.field, f.Type)
			continue
		}
		if o.meaning == "" {
			t.Errorf("%s: no meaning for the Options table", o.key)
		}
		v, err := o.kind.parse(o.kind, o.key, o.kind.format(o.def, false))
		if s := o.kind.format(o.def, false); s != "" && (err != nil || v != o.def) {
			t.Errorf("%s: default %v formats as %q, which parses as %v, %v", o.key, o.def, s, v, err)
		}
		if lookup(o.key) != o {
			t.Errorf("lookup(%q) is not its option", o.key)
		}
		for _, a := range o.aliases {
			if lookup(a.key) != o {
				t.Errorf("lookup(%q) is not the option of %q", a.key, o.key)
			}
		}
	}
	for f := range fields {
		t.Errorf("Config.%s has no option", f)
	}
}

// TestOptionFieldDocs: the doc comment of each option's Config field names
// its key (and aliases) and points to the Options table, which holds the
// description.
func TestOptionFieldDocs(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == "Config" {
			for _, fl := range ts.Type.(*ast.StructType).Fields.List {
				for _, name := range fl.Names {
					docs[name.Name] = strings.Join(strings.Fields(fl.Doc.Text()), " ")
				}
			}
		}
		return true
	})
	for _, o := range options {
		want := o.field + " is option " + o.key
		if len(o.aliases) > 0 {
			var as []string
			for _, a := range o.aliases {
				as = append(as, a.key)
			}
			want += " (alias " + strings.Join(as, ", ") + ")"
		}
		want += "; see Options."
		if !strings.HasPrefix(docs[o.field], want) {
			t.Errorf("Config.%s: doc comment %q, want it to start %q", o.field, docs[o.field], want)
		}
	}
}
