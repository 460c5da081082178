package balancer

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestScoresJSON(t *testing.T) {
	tests := []struct {
		name string
		s    Scores
		want string
	}{
		{name: "nothing", s: Scores{}, want: `{}`},
		{
			name: "recorded zeros are kept, unrecorded fields dropped",
			s:    Scores{SlowStart: 1, InFlightPerWeight: 0, Cost: 7, set: hasSlowStart | hasInFlightPerWeight},
			want: `{"slow_start":1,"inflight_per_weight":0}`,
		},
		{
			name: "built outside a strategy: non-zero fields",
			s:    Scores{Total: 5, ErrorAware: 0, LatencyScore: 0.25},
			want: `{"latency_score":0.25,"total":5}`,
		},
		{
			name: "non-finite values are never emitted",
			s:    Scores{Cost: math.Inf(1), LatencyEWMA: math.NaN(), SlowStart: 1, set: hasCost | hasLatencyEWMA | hasSlowStart},
			want: `{"slow_start":1}`,
		},
		{
			name: "adaptive fallback",
			s:    Scores{ErrorAware: 0, WRR: 150, LatencyAware: 40, RateLimitAware: -10000, Total: -9810, set: hasErrorAware | hasWRR | hasLatencyAware | hasRateLimitAware | hasTotal},
			want: `{"error_aware":0,"wrr":150,"latency_aware":40,"rate_limit_aware":-10000,"total":-9810}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(tt.s)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != tt.want {
				t.Errorf("JSON = %s, want %s", raw, tt.want)
			}
		})
	}
}

// TestScoresFieldTable checks that scoreFields lists the struct's fields in
// order, under their tag names, with getters reading the right field, and
// that each bit constant marks its own field.
func TestScoresFieldTable(t *testing.T) {
	typ := reflect.TypeFor[Scores]()
	var exported []reflect.StructField
	for f := range typ.Fields() {
		if f.IsExported() {
			exported = append(exported, f)
		}
	}
	if len(exported) != len(scoreFields) || hasTPSEWMA != 1<<(len(scoreFields)-1) {
		t.Fatalf("%d exported fields, %d in scoreFields, hasTPSEWMA %b", len(exported), len(scoreFields), hasTPSEWMA)
	}
	for i, f := range exported {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != scoreFields[i].name {
			t.Errorf("field %s tagged %q, scoreFields[%d] = %q", f.Name, name, i, scoreFields[i].name)
		}
		var s Scores
		reflect.ValueOf(&s).Elem().FieldByIndex(f.Index).SetFloat(float64(i + 1))
		if got := scoreFields[i].get(&s); got != float64(i+1) {
			t.Errorf("scoreFields[%d].get reads %v, not %s", i, got, f.Name)
		}
		s.set = 1 << i
		s.TPSEWMA = 0.5 // not recorded unless i is TPSEWMA's bit
		raw, _ := json.Marshal(s)
		if want := `{"` + name + `":` + strconv.Itoa(i+1) + `}`; i != len(exported)-1 && string(raw) != want {
			t.Errorf("bit %d marshals %s, want %s", i, raw, want)
		}
	}
}

// TestAppendFloat checks the float formatting against encoding/json.
func TestAppendFloat(t *testing.T) {
	for _, v := range []float64{0, 1, -1, 0.1, 1.6, 2.0 / 3, 1e-6, 9.99e-7, 1e-9, 123456789, 1e20, 1e21, -1e21, -10000, math.SmallestNonzeroFloat64, math.MaxFloat64} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendFloat(nil, v); string(got) != string(want) {
			t.Errorf("appendFloat(%v) = %s, want %s", v, got, want)
		}
	}
}

func TestReasonText(t *testing.T) {
	tests := []struct {
		name string
		r    CandidateRecord
		want string
	}{
		{name: "survivor", r: CandidateRecord{}, want: ""},
		{name: "inactive", r: CandidateRecord{Filter: FilterInactive}, want: "upstream inactive"},
		{name: "incompatible", r: CandidateRecord{Filter: FilterIncompatible, Detail: "n"}, want: "incompatible: n"},
		{name: "breaker with detail", r: CandidateRecord{Filter: FilterBreakerOpen, Detail: "5 consecutive failures"}, want: "breaker open: 5 consecutive failures"},
		{name: "breaker bare", r: CandidateRecord{Filter: FilterBreakerOpen}, want: "breaker open"},
		{name: "spend", r: CandidateRecord{Filter: FilterSpendExceeded, Detail: "daily $5"}, want: "spend quota exceeded: daily $5"},
		{name: "excluded", r: CandidateRecord{Filter: FilterExcluded}, want: "already tried by this request"},
		{name: "rate limited", r: CandidateRecord{Filter: FilterRateLimited, Detail: "rpm 60/60"}, want: "rate limited: rpm 60/60"},
		{name: "full", r: CandidateRecord{Filter: FilterConcurrencyFull, InFlight: 5, MaxConcurrency: 4}, want: "in-flight 5 of max 4"},
		{name: "waitable", r: CandidateRecord{Filter: FilterWaitable, InFlight: 4, MaxConcurrency: 4}, want: "in-flight 4 of max 4, queue enabled"},
		{name: "fallback", r: CandidateRecord{Fallback: true}, want: "rate limited, kept as a fallback"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.ReasonText(); got != tt.want {
				t.Errorf("ReasonText = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDecisionTiers(t *testing.T) {
	rec := func(name string, prio int) CandidateRecord { return CandidateRecord{Name: name, Priority: prio} }
	tests := []struct {
		name  string
		recs  []CandidateRecord
		prios []int
		sizes []int
	}{
		{name: "none", prios: []int{}, sizes: []int{}},
		{name: "one tier", recs: []CandidateRecord{rec("a", 3), rec("b", 3)}, prios: []int{3}, sizes: []int{2}},
		{name: "three tiers", recs: []CandidateRecord{rec("a", -1), rec("b", 0), rec("c", 0), rec("d", 7)}, prios: []int{-1, 0, 7}, sizes: []int{1, 2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decision{Candidates: tt.recs}
			tiers := d.Tiers()
			if tiers == nil {
				t.Fatalf("Tiers() = nil")
			}
			var prios, sizes []int
			for _, tr := range tiers {
				prios, sizes = append(prios, tr.Priority), append(sizes, len(tr.Candidates))
			}
			if !slices.Equal(prios, tt.prios) || !slices.Equal(sizes, tt.sizes) {
				t.Errorf("tiers %v sizes %v, want %v %v", prios, sizes, tt.prios, tt.sizes)
			}
			// The tiers share the records: appending to one cannot
			// overwrite the next.
			if len(tiers) > 1 {
				_ = append(tiers[0].Candidates, rec("x", 99))
				if d.Candidates[len(tiers[0].Candidates)].Name == "x" {
					t.Errorf("tier slice not capacity-limited")
				}
			}
		})
	}
}
