// Command deppy-bench resolves required packages over a file-based catalog directory with
// upstream deppy v0.3.0, encoded the way operator-controller encoded problems for it before
// it dropped deppy (2023-01 to 2024-05). It is the anchor of hack/bench-deppy: the same
// catalog and requests go to `deppy-resolver resolve`, both as whole processes.
//
// Encoding, one deppy variable each:
//   - "required package P": mandatory, with one dependency on every bundle of P, newest first;
//   - "<catalog>-<package>-<bundle>" for every bundle reachable from those, breadth first: one
//     dependency per olm.package.required (bundles of the package in the range, newest
//     first) and per olm.gvk.required (providers, by package name, then newest first);
//   - "<package> package uniqueness": at most one of the package's reachable bundles;
//   - "<group>/<version>/<kind> gvk uniqueness": at most one provider of an API, when its
//     reachable providers span packages.
//
// Candidate lists are built once per distinct requirement and shared between dependents, and
// bundles are indexed by package and API; operator-controller filtered the whole bundle list
// for every dependency of every bundle, so the times here are a lower bound for it.
//
// Output: one "package version" line per selected bundle, sorted; on stderr one line of
// statistics. Exit codes: 0 resolved, 1 not satisfiable, 2 invalid input.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/deppy/pkg/deppy"
	"github.com/operator-framework/deppy/pkg/deppy/constraint"
	"github.com/operator-framework/deppy/pkg/deppy/input"
	"github.com/operator-framework/deppy/pkg/deppy/solver"
)

// property is one entry of a blob's properties, its value kept as raw JSON the way
// operator-registry's declcfg holds it.
type property struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

type relatedImage struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}

type entry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces"`
	Skips     []string `json:"skips"`
	SkipRange string   `json:"skipRange"`
}

// meta is any FBC blob; fields of other schemas stay empty.
type meta struct {
	Schema         string         `json:"schema"`
	Package        string         `json:"package"`
	Name           string         `json:"name"`
	DefaultChannel string         `json:"defaultChannel"`
	Entries        []entry        `json:"entries"`
	Image          string         `json:"image"`
	RelatedImages  []relatedImage `json:"relatedImages"`
	Properties     []property     `json:"properties"`
}

type gvk struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

func (g gvk) String() string { return g.Group + "/" + g.Version + "/" + g.Kind }

type packageRequired struct {
	PackageName  string `json:"packageName"`
	VersionRange string `json:"versionRange"`
}

// requirement is one dependency of a bundle: a package in a range, or an API.
type requirement struct {
	pkg      string
	rng      string
	semver   semver.Range
	api      gvk
	isGVK    bool
	property string
}

func (r requirement) key() string {
	if r.isGVK {
		return "gvk " + r.api.String()
	}
	return "package " + r.pkg + " " + r.rng
}

type bundle struct {
	meta
	catalog  string
	version  semver.Version
	provides []gvk
	requires []requirement
	id       deppy.Identifier
}

type catalog struct {
	name     string
	bundles  []*bundle
	channels map[string][]meta // package -> its olm.channel blobs
	packages map[string]meta
}

// load reads every .json file under dir as a stream of FBC blobs.
func load(dir, name string) (*catalog, error) {
	c := &catalog{name: name, channels: map[string][]meta{}, packages: map[string]meta{}}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		switch filepath.Ext(path) {
		case ".json":
		case ".yaml", ".yml":
			return fmt.Errorf("%s: only JSON catalogs are supported by this benchmark", path)
		default:
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		decoder := json.NewDecoder(bufio.NewReaderSize(f, 1<<16))
		for {
			var m meta
			if err := decoder.Decode(&m); err == io.EOF {
				return nil
			} else if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			switch m.Schema {
			case "olm.package":
				c.packages[m.Name] = m
			case "olm.channel":
				c.channels[m.Package] = append(c.channels[m.Package], m)
			case "olm.bundle":
				b, err := newBundle(m, name)
				if err != nil {
					return fmt.Errorf("%s: bundle %s: %w", path, m.Name, err)
				}
				c.bundles = append(c.bundles, b)
			}
		}
	})
	return c, err
}

func newBundle(m meta, catalogName string) (*bundle, error) {
	b := &bundle{meta: m, catalog: catalogName}
	found := false
	for _, p := range m.Properties {
		switch p.Type {
		case "olm.package":
			var v struct {
				PackageName string `json:"packageName"`
				Version     string `json:"version"`
			}
			if err := json.Unmarshal(p.Value, &v); err != nil {
				return nil, err
			}
			version, err := semver.Parse(v.Version)
			if err != nil {
				return nil, err
			}
			b.version, found = version, true
		case "olm.gvk":
			var g gvk
			if err := json.Unmarshal(p.Value, &g); err != nil {
				return nil, err
			}
			b.provides = append(b.provides, g)
		case "olm.gvk.required":
			var g gvk
			if err := json.Unmarshal(p.Value, &g); err != nil {
				return nil, err
			}
			b.requires = append(b.requires, requirement{api: g, isGVK: true, property: p.Type})
		case "olm.package.required":
			var r packageRequired
			if err := json.Unmarshal(p.Value, &r); err != nil {
				return nil, err
			}
			rng, err := semver.ParseRange(r.VersionRange)
			if err != nil {
				return nil, err
			}
			b.requires = append(b.requires, requirement{pkg: r.PackageName, rng: r.VersionRange, semver: rng, property: p.Type})
		}
	}
	if !found {
		return nil, errors.New("no olm.package property")
	}
	// operator-controller's BundleVariableID.
	b.id = deppy.Identifier(fmt.Sprintf("%s-%s-%s", catalogName, m.Package, m.Name))
	return b, nil
}

// index groups bundles of every catalog by package (newest first) and by provided API.
type index struct {
	byPackage map[string][]*bundle
	byAPI     map[gvk][]*bundle
}

func newIndex(catalogs []*catalog) *index {
	x := &index{byPackage: map[string][]*bundle{}, byAPI: map[gvk][]*bundle{}}
	for _, c := range catalogs {
		for _, b := range c.bundles {
			x.byPackage[b.Package] = append(x.byPackage[b.Package], b)
			for _, g := range b.provides {
				x.byAPI[g] = append(x.byAPI[g], b)
			}
		}
	}
	newestFirst := func(bs []*bundle) {
		sort.SliceStable(bs, func(i, j int) bool {
			if bs[i].Package != bs[j].Package {
				return bs[i].Package < bs[j].Package
			}
			return bs[i].version.GT(bs[j].version)
		})
	}
	for _, bs := range x.byPackage {
		newestFirst(bs)
	}
	for _, bs := range x.byAPI {
		newestFirst(bs)
	}
	return x
}

func (x *index) candidates(r requirement) []*bundle {
	if r.isGVK {
		return x.byAPI[r.api]
	}
	var out []*bundle
	for _, b := range x.byPackage[r.pkg] {
		if r.semver(b.version) {
			out = append(out, b)
		}
	}
	return out
}

func ids(bs []*bundle) []deppy.Identifier {
	out := make([]deppy.Identifier, len(bs))
	for i, b := range bs {
		out[i] = b.id
	}
	return out
}

// problem builds the variables in operator-controller's order: required packages, bundles
// (breadth first from the required packages' candidates), uniqueness.
func problem(x *index, required []string) ([]deppy.Variable, map[deppy.Identifier]*bundle) {
	var variables []deppy.Variable
	var queue []*bundle
	for _, p := range required {
		candidates := x.byPackage[p]
		variables = append(variables, input.NewSimpleVariable(
			deppy.Identifier("required package "+p),
			constraint.Mandatory(),
			constraint.Dependency(ids(candidates)...),
		))
		queue = append(queue, candidates...)
	}

	bundles := map[deppy.Identifier]*bundle{}
	var order []*bundle
	shared := map[string][]*bundle{}
	for len(queue) > 0 {
		b := queue[0]
		queue = queue[1:]
		if _, seen := bundles[b.id]; seen {
			continue
		}
		bundles[b.id] = b
		order = append(order, b)
		v := input.NewSimpleVariable(b.id)
		for _, r := range b.requires {
			candidates, ok := shared[r.key()]
			if !ok {
				candidates = x.candidates(r)
				shared[r.key()] = candidates
			}
			v.AddConstraint(constraint.Dependency(ids(candidates)...))
			queue = append(queue, candidates...)
		}
		variables = append(variables, v)
	}

	var packages []string
	perPackage := map[string][]deppy.Identifier{}
	perAPI := map[gvk][]*bundle{}
	var apis []gvk
	for _, b := range order {
		if _, ok := perPackage[b.Package]; !ok {
			packages = append(packages, b.Package)
		}
		perPackage[b.Package] = append(perPackage[b.Package], b.id)
		for _, g := range b.provides {
			if _, ok := perAPI[g]; !ok {
				apis = append(apis, g)
			}
			perAPI[g] = append(perAPI[g], b)
		}
	}
	for _, p := range packages {
		variables = append(variables, input.NewSimpleVariable(
			deppy.Identifier(p+" package uniqueness"),
			constraint.AtMost(1, perPackage[p]...),
		))
	}
	for _, g := range apis {
		providers := perAPI[g]
		spans := false
		for _, b := range providers {
			spans = spans || b.Package != providers[0].Package
		}
		if spans {
			variables = append(variables, input.NewSimpleVariable(
				deppy.Identifier(g.String()+" gvk uniqueness"),
				constraint.AtMost(1, ids(providers)...),
			))
		}
	}
	return variables, bundles
}

type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(s string) error { *r = append(*r, s); return nil }

func main() {
	var catalogs, required repeated
	flag.Var(&catalogs, "catalog", "a file-based catalog directory (JSON files); repeatable")
	flag.Var(&required, "require", "a package to select; repeatable")
	flag.Parse()
	if len(catalogs) == 0 || len(required) == 0 {
		fmt.Fprintln(os.Stderr, "usage: deppy-bench --catalog DIR [--catalog DIR ...] --require PACKAGE [--require PACKAGE ...]")
		os.Exit(2)
	}

	started := time.Now()
	var loaded []*catalog
	for _, dir := range catalogs {
		c, err := load(dir, filepath.Base(filepath.Clean(dir)))
		if err != nil {
			fmt.Fprintf(os.Stderr, "error: failed to load catalog %s: %v\n", dir, err)
			os.Exit(2)
		}
		loaded = append(loaded, c)
	}
	x := newIndex(loaded)
	loadTime := time.Since(started)

	building := time.Now()
	variables, bundles := problem(x, required)
	buildTime := time.Since(building)

	solving := time.Now()
	s, err := solver.New()
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(3)
	}
	selected, err := s.Solve(variables)
	solveTime := time.Since(solving)
	fmt.Fprintf(os.Stderr, "variables=%d bundles=%d load_s=%.3f build_s=%.3f solve_s=%.3f\n",
		len(variables), len(bundles), loadTime.Seconds(), buildTime.Seconds(), solveTime.Seconds())
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	var lines []string
	for _, v := range selected {
		if b, ok := bundles[v.Identifier()]; ok {
			lines = append(lines, b.Package+" "+b.version.String())
		}
	}
	sort.Strings(lines)
	out := bufio.NewWriter(os.Stdout)
	for _, line := range lines {
		fmt.Fprintln(out, line)
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "error: failed to write the output: %v\n", err)
		os.Exit(3)
	}
}
