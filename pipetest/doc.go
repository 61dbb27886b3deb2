// Package pipetest runs a pipeline's transform chain offline, on records
// given in a test file, and compares what becomes of each with what the
// file expects: the outputs (topic, key, value, headers), a dead letter,
// or a release for another delivery. `relay test` is its command; no Kafka
// is involved.
//
// What becomes of a record is decided as the relay decides it: the same
// chain (config.Pipeline.Chain, with the pipeline's cost limit), the same
// release-or-dead-letter rule (transform.Decide), and the same lineage
// headers on the outputs (the source coordinates, and the index and count
// of a fan-out).
//
// # Test files
//
// A test file is YAML:
//
//	max_attempts: 4          # optional, see Suite.MaxAttempts
//	cases:
//	  - name: a paid order becomes a packing job
//	    input:
//	      key: "42"                    # text; left out: a null key
//	      value: {order_id: 42}        # a mapping, list, number or bool is
//	                                   # written as JSON; a string as it is
//	      headers: {source: web}
//	      delivery_count: 1            # default 1
//	      # topic, partition, offset, timestamp: the source record's
//	      # (default: the first source topic, 0, 0, no timestamp)
//	    expect:
//	      outputs:                     # every output, in order; [] = filtered
//	        - topic: booknest.packing-jobs   # default: output.topic
//	          key: "42"                      # left out: not checked
//	          value: {order_id: 42, status: packing}
//	          headers: {job-type: packing}   # a subset; null: must be absent
//	  - name: an order with a bad address is dead-lettered
//	    input: {value: {order_id: 500}}
//	    expect:
//	      dead_letter: {kind: permanent, class: fail, step: bad-address, reason: bad address}
//	  - name: a printer jam releases the order on its first delivery
//	    input: {value: {order_id: 7}, delivery_count: 1}
//	    expect: {release: true}
//
// The file is read as strictly as a pipeline file (config.DecodeStrict):
// every problem in it is reported at once, each at its file:line:col, and
// a misspelt field with the field it probably meant ("expected: unknown
// field (did you mean "expect"?)"). Its schema is
// configs/pipeline-test.schema.json: a file whose first line is
//
//	# yaml-language-server: $schema=../pipeline-test.schema.json
//
// (the path relative to the file) is completed and checked in editors
// running yaml-language-server.
//
// Each case expects exactly one of outputs, dead_letter and release.
// Values compare as JSON (1.0 equals 1, key order does not matter) when
// both the expected and the actual value parse as JSON, and as bytes
// otherwise. A dead letter's reason is a part of its error message.
//
// By default, the tests of a pipeline file dir/name.yaml are in
// dir/tests/name.test.yaml (DefaultFile).
package pipetest
