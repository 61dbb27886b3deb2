// Package harness holds what every real-broker test of sharerelay does
// around the relay: build the relay binary, write a pipeline file, create
// the pipeline's topics, seed orders (JSON, or Avro under a schema
// registry: AvroOrders), run relay processes, and wait until
// no transaction is left open. integration/ and integration/chaos/ both
// build on it, so a helper exists once and cannot drift between the two
// suites; a new scenario is the few lines that make it different.
//
// The broker itself comes from integration/kafkatest. A scenario reads:
//
//	bin, cleanup, err := harness.BuildRelay(ctx)      // once, in TestMain
//	...
//	p, err := harness.NewPipeline(ctx, harness.PipelineOptions{
//		Name: name, Seeds: seeds, Dir: t.TempDir(), Workers: 2,
//	})
//	err = harness.Orders{Topic: p.Source}.Seed(ctx, p.SourceSeeds, 1, 1000)
//	cmd := harness.RelayCommand(bin, p.Path, "a")
//	cmd.LogPath = filepath.Join(t.TempDir(), "a.log")
//	pr, err := harness.Start(cmd)
//	defer pr.Kill()
//	...
//	err = harness.WaitNoOpenTransactions(ctx, adm, p.Output, p.DeadLetter, p.Ledger)
//
// A pipeline may have its source on a cluster of its own
// (PipelineOptions.SourceSeeds, the file's source.cluster): the source
// topic and the share group are then read and seeded through
// Pipeline.SourceSeeds, the output, dead letters and ledger through
// Pipeline.Seeds. On one cluster the two are the same.
//
// Every function returns its errors, wrapped with what it was doing,
// rather than failing a test: the chaos suite calls some of them from
// goroutines that must not call t.Fatal, and cmd/bench is not a test. Every
// blocking call takes a context, except Proc.Wait, whose bound is its
// duration. Processes are Unix processes (signals, process groups).
package harness
