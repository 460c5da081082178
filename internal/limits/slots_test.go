package limits

import (
	"sync"
	"testing"
)

func TestSlotsEnforceLimit(t *testing.T) {
	s := NewSlots()
	var releases []func()
	for i := 0; i < 3; i++ {
		r, ok := s.TryAcquire("u", 3)
		if !ok {
			t.Fatalf("acquire %d refused", i)
		}
		releases = append(releases, r)
	}
	if _, ok := s.TryAcquire("u", 3); ok {
		t.Fatal("fourth slot granted with max 3")
	}
	releases[0]()
	releases[0]() // a second call is harmless
	if got := s.InFlight("u"); got != 2 {
		t.Fatalf("in flight %d, want 2", got)
	}
	if _, ok := s.TryAcquire("u", 3); !ok {
		t.Fatal("freed slot not granted")
	}
	if _, ok := s.TryAcquire("other", 0); !ok {
		t.Fatal("unlimited upstream refused")
	}
}

func TestSlotsConcurrentNeverExceed(t *testing.T) {
	s := NewSlots()
	const limit = 4
	var wg sync.WaitGroup
	var mu sync.Mutex
	maxSeen := int64(0)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				r, ok := s.TryAcquire("u", limit)
				if !ok {
					continue
				}
				n := s.InFlight("u")
				mu.Lock()
				maxSeen = max(maxSeen, n)
				mu.Unlock()
				r()
			}
		}()
	}
	wg.Wait()
	if maxSeen > limit || s.InFlight("u") != 0 {
		t.Fatalf("max seen %d (limit %d), left %d", maxSeen, limit, s.InFlight("u"))
	}
}
