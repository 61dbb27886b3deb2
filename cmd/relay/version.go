package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// buildVersion is what the binary knows about how it was built.
type buildVersion struct {
	Module, Version string // the main module and its version ("(devel)" from a checkout)
	Revision, Time  string // the VCS commit and its time; "" when not stamped
	Modified        bool   // the work tree had uncommitted changes
	Go, Platform    string // the toolchain, GOOS/GOARCH
	FranzGo         string // the franz-go version linked in
}

// readBuildVersion reads the build information the Go toolchain embeds
// (runtime/debug.ReadBuildInfo). A binary built with -buildvcs=false, or
// outside a VCS checkout, has no revision.
func readBuildVersion() buildVersion {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return buildVersion{Version: "unknown", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) buildVersion {
	v := buildVersion{Module: bi.Main.Path, Version: bi.Main.Version, Go: bi.GoVersion,
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if v.Version == "" {
		v.Version = "unknown"
	}
	var goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	if goos != "" && goarch != "" {
		v.Platform = goos + "/" + goarch
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/twmb/franz-go" {
			v.FranzGo = d.Version
			if d.Replace != nil {
				v.FranzGo += " => " + d.Replace.Path + " " + d.Replace.Version
			}
		}
	}
	return v
}

// logAttrs are the fields relay run logs at start.
func (v buildVersion) logAttrs() []any {
	return []any{"version", v.Version, "revision", v.revision(), "go", v.Go}
}

func (v buildVersion) revision() string {
	switch {
	case v.Revision == "":
		return "unknown"
	case v.Modified:
		return v.Revision + "+modified"
	}
	return v.Revision
}

func (v buildVersion) print(w io.Writer) {
	fmt.Fprintf(w, "relay %s\n", v.Version)
	fmt.Fprintf(w, "  module    %s\n", v.Module)
	if v.Revision == "" {
		fmt.Fprintln(w, "  revision  unknown (built without VCS information: -buildvcs=false or outside a checkout)")
	} else {
		mod := ""
		if v.Modified {
			mod = " (modified: built with uncommitted changes)"
		}
		fmt.Fprintf(w, "  revision  %s%s\n", v.Revision, mod)
		if v.Time != "" {
			fmt.Fprintf(w, "  time      %s\n", v.Time)
		}
	}
	fmt.Fprintf(w, "  go        %s %s\n", v.Go, v.Platform)
	if v.FranzGo != "" {
		fmt.Fprintf(w, "  franz-go  %s\n", v.FranzGo)
	}
}
