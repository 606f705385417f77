// Command statecheck enforces the workflow layer's state core: only the
// state package, workflow/internal/state, changes a backend record's
// status, its admissible flag or one of its counters, or appends an event.
// It type-checks each package it is given and reports, outside the core,
// every assignment (=, op=, ++, --) to one of those fields of a
// backend.Run, backend.Activation, backend.Attempt or backend.FanOutGroup,
// every call of the batch's event primitives (emit, event) and every
// insert of a backend.Event (insert, or the core's Insert).
//
// Sites the core has not absorbed yet are listed in baseline.txt
// ("file function count" per line): a function may keep at most its
// listed count, and a listing above the current count fails too, so the
// list only shrinks. Run from the module root:
//
//	go run ./tools/statecheck            # checks ./workflow and its core
//	go run ./tools/statecheck DIR ...    # checks DIR (no baseline)
//
// A directory whose path ends in internal/state is a core: its state
// changes are allowed, and only the parameter rule below applies to it.
//
// It also holds every function of the packages, core included, to at most
// MaxParams parameters (receiver not counted): a longer list is grouped
// into an input struct named for what it is, or becomes a method of the
// context it threads. That rule has no baseline.
//
// It exits 1 and prints each offending site when a rule is broken.
package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const backendPath = "github.com/wfstore/wfstore/backend"

// guarded are the fields of backend records only the core assigns.
var guarded = map[string]map[string]bool{
	"Run":         set("Status", "AttemptCount", "ActiveCount", "TreeAttemptCount", "DescendantCount", "LastEventSeq"),
	"Activation":  set("Status", "Admissible", "LastAttempt", "OpenWaits"),
	"Attempt":     set("Status"),
	"FanOutGroup": set("Promoted", "Settled"),
}

// MaxParams is the most parameters a function of the checked package may
// take.
const MaxParams = 6

// primitives are the batch's event-appending methods; they may call each
// other (emit calls event) wherever they are defined.
var primitives = set("emit", "event", "appendEvent", "emitDirect")

// coreSuffix ends the directory of a state core.
const coreSuffix = "internal/state"

// defaultDirs are what CI checks: the Store's package and its core.
var defaultDirs = []string{"workflow", filepath.Join("workflow", "internal", "state")}

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// violation is one site outside the core.
type violation struct {
	pos  token.Position
	fn   string // enclosing function or method name
	what string
	// strict: no baseline entry allows it (a parameter list too long).
	strict bool
}

func main() {
	dirs := os.Args[1:]
	baseline := map[string]int{}
	if len(dirs) == 0 {
		dirs = defaultDirs
		b, err := readBaseline(filepath.Join("tools", "statecheck", "baseline.txt"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "statecheck:", err)
			os.Exit(2)
		}
		baseline = b
	}
	var all []violation
	for _, d := range dirs {
		v, err := check(d)
		if err != nil {
			fmt.Fprintln(os.Stderr, "statecheck:", err)
			os.Exit(2)
		}
		all = append(all, v...)
	}
	os.Exit(report(os.Stdout, all, baseline))
}

// report prints the violations the baseline does not allow and the
// baseline entries that allow more than remains; it returns the exit code.
func report(w io.Writer, vs []violation, baseline map[string]int) int {
	byKey := map[string][]violation{}
	bad := 0
	for _, v := range vs {
		if v.strict {
			fmt.Fprintf(w, "%s: %s %s\n", v.pos, v.fn, v.what)
			bad++
			continue
		}
		k := filepath.Base(v.pos.Filename) + " " + v.fn
		byKey[k] = append(byKey[k], v)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if len(byKey[k]) <= baseline[k] {
			continue
		}
		for _, v := range byKey[k] {
			fmt.Fprintf(w, "%s: %s %s outside the state core\n", v.pos, v.fn, v.what)
			bad++
		}
	}
	stale := make([]string, 0)
	for k, n := range baseline {
		if len(byKey[k]) < n {
			stale = append(stale, fmt.Sprintf("baseline.txt allows %d in %q, %d remain: lower it", n, k, len(byKey[k])))
		}
	}
	sort.Strings(stale)
	for _, s := range stale {
		fmt.Fprintln(w, s)
		bad++
	}
	if bad > 0 {
		fmt.Fprintf(w, "statecheck: %d problem(s); state changes and event appends belong in the state package (workflow/internal/state), and a function takes at most %d parameters\n", bad, MaxParams)
		return 1
	}
	fmt.Fprintf(w, "statecheck: ok (%d site(s) outside the core, all in baseline.txt; no function over %d parameters)\n", len(vs), MaxParams)
	return 0
}

func readBaseline(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s: bad line %q (want: file function count)", path, line)
		}
		n, err := strconv.Atoi(fields[2])
		if err != nil {
			return nil, fmt.Errorf("%s: bad count in %q", path, line)
		}
		out[fields[0]+" "+fields[1]] = n
	}
	return out, sc.Err()
}

// core reports whether dir holds a state core.
func core(dir string) bool {
	return strings.HasSuffix(filepath.ToSlash(filepath.Clean(dir)), coreSuffix)
}

// check type-checks the package in dir (tests excluded) and returns its
// violations.
func check(dir string) ([]violation, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	byPkg := map[string][]*ast.File{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		byPkg[f.Name.Name] = append(byPkg[f.Name.Name], f)
	}
	var out []violation
	for pkgName, files := range byPkg {
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
		conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil), Error: func(error) {}}
		if _, err := conf.Check(pkgName, fset, files, info); err != nil && len(info.Types) == 0 {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		for _, f := range files {
			out = append(out, longParams(fset, f)...)
			if core(dir) {
				continue
			}
			out = append(out, inspectFile(fset, f, info)...)
		}
	}
	return out, nil
}

func inspectFile(fset *token.FileSet, f *ast.File, info *types.Info) []violation {
	var out []violation
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		// The bare name keys the baseline: it survives a method moving to
		// another receiver type in place.
		name := fd.Name.Name
		if fd.Recv != nil && primitives[fd.Name.Name] && isBatch(recvName(fd.Recv.List[0].Type)) {
			continue // the event log itself: it sequences what the core appends
		}
		add := func(n ast.Node, what string) {
			out = append(out, violation{pos: fset.Position(n.Pos()), fn: name, what: what})
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.AssignStmt:
				if x.Tok == token.DEFINE {
					return true
				}
				for _, lhs := range x.Lhs {
					if field, rec := guardedField(lhs, info); field != "" {
						add(lhs, "assigns "+rec+"."+field)
					}
				}
			case *ast.IncDecStmt:
				if field, rec := guardedField(x.X, info); field != "" {
					add(x.X, "assigns "+rec+"."+field)
				}
			case *ast.CallExpr:
				if what := eventAppend(x, info); what != "" {
					add(x, what)
				}
			}
			return true
		})
	}
	return out
}

// longParams reports every function declaration and function literal of f
// with more than MaxParams parameters.
func longParams(fset *token.FileSet, f *ast.File) []violation {
	var out []violation
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		name := fd.Name.Name
		if n := countParams(fd.Type); n > MaxParams {
			out = append(out, violation{pos: fset.Position(fd.Pos()), fn: name, what: fmt.Sprintf("takes %d parameters (at most %d)", n, MaxParams), strict: true})
		}
		if fd.Body == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if lit, ok := n.(*ast.FuncLit); ok {
				if c := countParams(lit.Type); c > MaxParams {
					out = append(out, violation{pos: fset.Position(lit.Pos()), fn: name, what: fmt.Sprintf("has a function literal taking %d parameters (at most %d)", c, MaxParams), strict: true})
				}
			}
			return true
		})
	}
	return out
}

// countParams counts the parameters of t: a, b int is two.
func countParams(t *ast.FuncType) int {
	n := 0
	if t.Params == nil {
		return 0
	}
	for _, field := range t.Params.List {
		n += max(1, len(field.Names))
	}
	return n
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return recvName(t.X)
	}
	return ""
}

// guardedField returns the field and record name when e selects a guarded
// field of a backend record.
func guardedField(e ast.Expr, info *types.Info) (string, string) {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return "", ""
	}
	s, ok := info.Selections[sel]
	if !ok || s.Kind() != types.FieldVal {
		return "", ""
	}
	rec := backendRecord(s.Recv())
	if rec == "" || !guarded[rec][sel.Sel.Name] {
		return "", ""
	}
	return sel.Sel.Name, rec
}

// backendRecord names t (or what t points to) when it is a record type of
// the backend package.
func backendRecord(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Pkg() == nil || n.Obj().Pkg().Path() != backendPath {
		return ""
	}
	if _, ok := guarded[n.Obj().Name()]; !ok {
		return ""
	}
	return n.Obj().Name()
}

// eventAppend describes call when it appends an event: a call of a batch
// primitive, or an insert of a backend.Event.
func eventAppend(call *ast.CallExpr, info *types.Info) string {
	switch fn := ast.Unparen(call.Fun).(type) {
	case *ast.SelectorExpr:
		if s, ok := info.Selections[fn]; ok {
			if primitives[fn.Sel.Name] && s.Kind() == types.MethodVal && (recvIs(s.Recv(), "batch") || recvIs(s.Recv(), "Batch")) {
				return "appends an event (" + fn.Sel.Name + ")"
			}
			return ""
		}
		// A package's function: the core's Insert.
		if fn.Sel.Name == "Insert" && insertsEvent(call, info) {
			return "appends an event (insert of a backend.Event)"
		}
	case *ast.Ident, *ast.IndexExpr:
		if name := recvName(fn); (name == "insert" || name == "Insert") && insertsEvent(call, info) {
			return "appends an event (insert of a backend.Event)"
		}
	}
	return ""
}

// insertsEvent reports whether call's second argument is a backend.Event.
func insertsEvent(call *ast.CallExpr, info *types.Info) bool {
	if len(call.Args) != 2 {
		return false
	}
	tv, ok := info.Types[call.Args[1]]
	return ok && backendNamed(tv.Type, "Event")
}

func isBatch(name string) bool { return name == "batch" || name == "Batch" }

func recvIs(t types.Type, name string) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Name() == name
}

func backendNamed(t types.Type, name string) bool {
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == backendPath && n.Obj().Name() == name
}
