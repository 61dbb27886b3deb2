// Package configs holds the pipeline files shipped with sharerelay, embedded
// so that the demo and tests can run them without a path on disk.
//
// Each file is YAML for config.Parse, and names pipeline.schema.json on its
// first line so that editors running yaml-language-server complete and check
// it. The tests of each pipeline (tests/, examples/tests/, read by package
// pipetest) name pipeline-test.schema.json likewise.
package configs

import "embed"

// FS holds every *.yaml file of this directory.
//
//go:embed *.yaml
var FS embed.FS

// BookNestFile is the name, within FS, of the BookNest packing pipeline.
const BookNestFile = "booknest-packing.yaml"

// BookNest returns the BookNest packing pipeline (booknest-packing.yaml):
// paid orders from booknest.orders become packing jobs on
// booknest.packing-jobs, with failing orders dead-lettered to
// booknest.packing-jobs.dlq. Parse it with config.Parse.
func BookNest() []byte {
	b, err := FS.ReadFile(BookNestFile)
	if err != nil {
		panic("configs: " + err.Error()) // cannot happen: the file is embedded
	}
	return b
}
