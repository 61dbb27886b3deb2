// Command doccheck reports exported names that have no doc comment, the
// one house rule staticcheck does not check: its ST1020–ST1022 check the
// form of a doc comment that is there, not that there is one.
//
//	go run ./internal/tools/doccheck [dir]...
//
// It walks each directory (default ".") and reads every Go file that is
// neither a test nor generated code. A name needs a comment when it is
// exported and declared at the top level: a function, a method of an
// exported type, a type, a constant or a variable. A constant or variable
// in a parenthesized group is covered by the group's comment, its own, or
// a comment at the end of its line. Struct fields and interface methods are
// not checked. Each finding is printed as file:line:col: message; the exit
// status is 1 if there is any, 2 if a file cannot be read.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	roots := os.Args[1:]
	if len(roots) == 0 {
		roots = []string{"."}
	}
	var all []finding
	for _, root := range roots {
		f, err := checkTree(root)
		if err != nil {
			fmt.Fprintln(os.Stderr, "doccheck:", err)
			os.Exit(2)
		}
		all = append(all, f...)
	}
	for _, f := range all {
		fmt.Println(f)
	}
	if len(all) > 0 {
		fmt.Fprintf(os.Stderr, "doccheck: %d exported %s without a doc comment\n", len(all), plural(len(all), "name", "names"))
		os.Exit(1)
	}
}

// finding is one exported name without a doc comment.
type finding struct {
	pos  token.Position
	kind string // func, method, type, const, var
	name string
}

func (f finding) String() string {
	return fmt.Sprintf("%s: exported %s %s has no doc comment", f.pos, f.kind, f.name)
}

// checkTree checks every Go file under root, skipping directories that the
// go command ignores (testdata, and names starting with . or _).
func checkTree(root string) ([]finding, error) {
	var out []finding
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := checkFile(fset, path, src)
		if err != nil {
			return err
		}
		out = append(out, f...)
		return nil
	})
	return out, err
}

// checkFile returns the exported names of one file that have no doc
// comment, in source order; generated files have none by definition.
func checkFile(fset *token.FileSet, path string, src []byte) ([]finding, error) {
	file, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(file) {
		return nil, nil
	}
	var out []finding
	add := func(pos token.Pos, kind, name string) {
		out = append(out, finding{pos: fset.Position(pos), kind: kind, name: name})
	}
	for _, decl := range file.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || d.Doc != nil {
				continue
			}
			if d.Recv == nil {
				add(d.Name.Pos(), "func", d.Name.Name)
				continue
			}
			if recv := receiverType(d.Recv); ast.IsExported(recv) {
				add(d.Name.Pos(), "method", recv+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			grouped := d.Lparen.IsValid()
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && s.Doc == nil && (grouped || d.Doc == nil) {
						add(s.Name.Pos(), "type", s.Name.Name)
					}
				case *ast.ValueSpec:
					if d.Doc != nil || s.Doc != nil || (grouped && s.Comment != nil) {
						continue
					}
					for _, n := range s.Names {
						if n.IsExported() {
							add(n.Pos(), d.Tok.String(), n.Name)
						}
					}
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].pos.Offset < out[j].pos.Offset })
	return out, nil
}

// receiverType returns the name of a method's receiver type, without a
// pointer or type parameters.
func receiverType(recv *ast.FieldList) string {
	if len(recv.List) == 0 {
		return ""
	}
	t := recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.ParenExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
