// Command report reads the JSON lines bench/load wrote for the load
// benchmark (bench/run.sh) and prints them as markdown: one table of the
// JSON runs, one of the streaming runs, each with the deltas against direct
// and against the bare hop, one of the long-streams runs (bench/run.sh
// streams), and the targets of issues 8 and 26 with PASS or FAIL.
//
//	report results.jsonl
//
// With -strict it exits 1 when a target fails or cannot be judged.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"switchyard/bench/internal/record"
)

func main() {
	strict := flag.Bool("strict", false, "exit 1 unless every target passes")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: report [-strict] results.jsonl")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	defer f.Close()
	recs, err := load(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	s := newSet(recs)
	s.write(os.Stdout)
	var checks []check
	if s.has(func(m string) bool { return m != record.ModeStreams }) {
		checks = evaluate(s, defaultLimits)
	}
	checks = append(checks, evaluateStreams(s, defaultStreamLimits)...)
	writeChecks(os.Stdout, checks)
	if *strict {
		for _, c := range checks {
			if !c.pass {
				os.Exit(1)
			}
		}
	}
}

// load reads one record.Record per line; blank lines are skipped.
func load(r io.Reader) ([]record.Record, error) {
	var recs []record.Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec record.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("decoding line %d: %w", n, err)
		}
		recs = append(recs, rec)
	}
	return recs, sc.Err()
}
