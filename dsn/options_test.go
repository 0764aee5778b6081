package dsn

import (
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
