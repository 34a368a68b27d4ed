// specdiff: does runc read an OCI document as its exactly spelled keys say? It decodes the
// document as runc does (encoding/json into specs.Spec, specs.Process or specs.LinuxResources:
// case-folded keys, the later match winning) and again with every key that is not a field's exact
// spelling removed first, then compares the two readings value by value. Prints "agree" (exit 0),
// or "disagree: PATH: runc reads X, the exact keys say Y" for the first path that differs (exit 1).
// Usage: specdiff spec|process|resources FILE   (exit 2: usage, unreadable file, or a document
// runc itself would refuse to decode, printed as "undecodable: ...").
//
//	specdiff fields spec|process|resources   one line per field of the Go type, at any
//
// depth: PATH, a tab, and a document that holds only that field with its first letter's case
// flipped (the schema test: the shim must refuse every one).
// Build offline: GO111MODULE=off GOPATH=/usr/share/gocode go build -o specdiff .
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func newTarget(kind string) interface{} {
	switch kind {
	case "spec":
		return &specs.Spec{}
	case "process":
		return &specs.Process{}
	case "resources":
		return &specs.LinuxResources{}
	}
	return nil
}

// jsonName is the key encoding/json uses for a struct field, or "" when it has none.
func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return ""
	}
	name := strings.Split(tag, ",")[0]
	if name == "" {
		name = f.Name
	}
	return name
}

// fieldType finds the type of the field spelled exactly name in struct t (embedded structs'
// fields included, as encoding/json promotes them).
func fieldType(t reflect.Type, name string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Tag.Get("json") == "" {
			et := f.Type
			if et.Kind() == reflect.Ptr {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if ft, ok := fieldType(et, name); ok {
					return ft, true
				}
			}
			continue
		}
		if f.PkgPath != "" {
			continue
		}
		if jsonName(f) == name {
			return f.Type, true
		}
	}
	return nil, false
}

// exactOnly keeps, in a generic JSON value meant for type t, only the keys spelled exactly as a
// field of t; map keys (data) are all kept.
func exactOnly(v interface{}, t reflect.Type) interface{} {
	for t.Kind() == reflect.Ptr {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]interface{})
		if !ok {
			return v
		}
		out := map[string]interface{}{}
		for k, x := range m {
			if ft, ok := fieldType(t, k); ok {
				out[k] = exactOnly(x, ft)
			}
		}
		return out
	case reflect.Slice, reflect.Array:
		a, ok := v.([]interface{})
		if !ok {
			return v
		}
		out := make([]interface{}, len(a))
		for i, x := range a {
			out[i] = exactOnly(x, t.Elem())
		}
		return out
	case reflect.Map:
		m, ok := v.(map[string]interface{})
		if !ok {
			return v
		}
		out := map[string]interface{}{}
		for k, x := range m {
			out[k] = exactOnly(x, t.Elem())
		}
		return out
	}
	return v
}

// generic turns a typed value into the JSON tree encoding/json writes for it.
func generic(v interface{}) (interface{}, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var g interface{}
	err = d.Decode(&g)
	return g, err
}

func show(v interface{}) string {
	if v == nil {
		return "(absent)"
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// diff returns the first path (in sorted key order) where a and b differ, or "".
func diff(path string, a, b interface{}) string {
	am, aok := a.(map[string]interface{})
	bm, bok := b.(map[string]interface{})
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if d := diff(p, am[k], bm[k]); d != "" {
				return d
			}
		}
		return ""
	}
	aa, aok := a.([]interface{})
	ba, bok := b.([]interface{})
	if aok && bok && len(aa) == len(ba) {
		for i := range aa {
			if d := diff(fmt.Sprintf("%s[%d]", path, i), aa[i], ba[i]); d != "" {
				return d
			}
		}
		return ""
	}
	if reflect.DeepEqual(a, b) {
		return ""
	}
	if path == "" {
		path = "(document)"
	}
	return fmt.Sprintf("%s: runc reads %s, the exact keys say %s", path, show(a), show(b))
}

// flip changes the case of the first letter of name.
func flip(name string) string {
	c := name[0]
	switch {
	case c >= 'a' && c <= 'z':
		c -= 'a' - 'A'
	case c >= 'A' && c <= 'Z':
		c += 'a' - 'A'
	}
	return string(c) + name[1:]
}

// fields calls emit for every field reachable from type t: the path to it, and the document
// wrap(a one-key object holding the field with its name flipped).
func fields(t reflect.Type, path string, wrap func(interface{}) interface{},
	emit func(string, interface{})) {
	for t.Kind() == reflect.Ptr {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		fields(t.Elem(), path+"[0]", func(v interface{}) interface{} {
			return wrap([]interface{}{v})
		}, emit)
	case reflect.Map:
		fields(t.Elem(), path+"[\"k\"]", func(v interface{}) interface{} {
			return wrap(map[string]interface{}{"k": v})
		}, emit)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous && f.Tag.Get("json") == "" {
				fields(f.Type, path, wrap, emit)
				continue
			}
			name := jsonName(f)
			if f.PkgPath != "" || name == "" {
				continue
			}
			p := name
			if path != "" {
				p = path + "." + name
			}
			emit(p, wrap(map[string]interface{}{flip(name): nil}))
			fields(f.Type, p, func(v interface{}) interface{} {
				return wrap(map[string]interface{}{name: v})
			}, emit)
		}
	}
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "fields" && newTarget(os.Args[2]) != nil {
		fields(reflect.TypeOf(newTarget(os.Args[2])), "",
			func(v interface{}) interface{} { return v },
			func(path string, doc interface{}) {
				b, _ := json.Marshal(doc)
				fmt.Printf("%s\t%s\n", path, b)
			})
		return
	}
	if len(os.Args) != 3 || newTarget(os.Args[1]) == nil {
		fmt.Fprintln(os.Stderr, "usage: specdiff spec|process|resources FILE")
		os.Exit(2)
	}
	kind := os.Args[1]
	data, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	// As runc: json.NewDecoder(f).Decode(&spec).
	asRunc := newTarget(kind)
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(asRunc); err != nil {
		fmt.Printf("undecodable: %v\n", err)
		os.Exit(2)
	}

	var raw interface{}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		fmt.Printf("undecodable: %v\n", err)
		os.Exit(2)
	}
	exactJSON, err := json.Marshal(exactOnly(raw, reflect.TypeOf(asRunc)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	asExact := newTarget(kind)
	if err := json.Unmarshal(exactJSON, asExact); err != nil {
		fmt.Printf("undecodable: %v\n", err)
		os.Exit(2)
	}

	a, err1 := generic(asRunc)
	b, err2 := generic(asExact)
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, err1, err2)
		os.Exit(2)
	}
	if p := diff("", a, b); p != "" {
		fmt.Printf("disagree: %s\n", p)
		os.Exit(1)
	}
	fmt.Println("agree")
}
