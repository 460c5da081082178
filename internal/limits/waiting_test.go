package limits

import (
	"maps"
	"testing"
)

func TestWaiting(t *testing.T) {
	var w Waiting
	d1 := w.Add("u", Tenant{Key: "a"})
	d2 := w.Add("u", Tenant{Key: "a"})
	d3 := w.Add("u", Tenant{Key: "x", Class: ClassBatch})
	d4 := w.Add("v", Tenant{Key: "a", Class: ClassCritical})
	byClass, byKey := w.Of("u")
	if want := map[string]int{"interactive": 2, "batch": 1}; !maps.Equal(byClass, want) {
		t.Fatalf("by class = %v, want %v", byClass, want)
	}
	if want := map[string]int{"a": 2, "x": 1}; !maps.Equal(byKey, want) {
		t.Fatalf("by key = %v, want %v", byKey, want)
	}
	research := func(key string, w float64) Tenant {
		return Tenant{Team: "research", Key: key, Weight: w, TeamWeight: 3}
	}
	d5 := w.Add("u", research("r", 2))
	d6 := w.Add("u", research("s", 1))
	d7 := w.Add("u", research("s", 1))
	d8 := w.Add("u", Tenant{Team: "research", Key: "n", Class: ClassBatch, Weight: 1, TeamWeight: 3})
	// research's interactive keys r and s split its weight 3 by 2:1;
	// its batch key n, alone in its class, has all of it.
	if got, want := w.Shares("u"), map[string]float64{"a": 1, "x": 1, "r": 2, "s": 1, "n": 3}; !maps.Equal(got, want) {
		t.Fatalf("shares = %v, want %v", got, want)
	}
	d5()
	if got := w.Shares("u")["s"]; got != 3 {
		t.Fatalf("s's share once r stopped waiting = %v, want the team's 3", got)
	}
	d6()
	d7()
	d8()
	d1()
	d2()
	d3()
	if byClass, byKey := w.Of("u"); byClass != nil || byKey != nil {
		t.Fatalf("after every waiter left: %v, %v; want none", byClass, byKey)
	}
	if s := w.Shares("u"); s != nil {
		t.Fatalf("shares after every waiter left = %v, want none", s)
	}
	if byClass, _ := w.Of("v"); byClass["critical"] != 1 {
		t.Fatalf("v by class = %v, want critical 1", byClass)
	}
	d4()
}
