package profile

import (
	"slices"
	"testing"
	"time"
)

// TestBounds: a profile's linear pieces end at each step's jump and each
// stage's end, counted from where the profile starts.
func TestBounds(t *testing.T) {
	st := []Stage{{Duration: time.Second, From: 5, To: 5}, {Duration: 4 * time.Second, From: 0, To: 4, Steps: 4}, {Duration: time.Second, From: 4, To: 0}}
	got := Bounds([]time.Duration{time.Hour}, st, 10*time.Second)
	want := []time.Duration{time.Hour, 11 * time.Second, 12 * time.Second, 13 * time.Second, 14 * time.Second, 15 * time.Second, 16 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("Bounds = %v, want %v", got, want)
	}
	if w := (Wave{Offset: time.Minute, Stages: st}); w.Duration() != 6*time.Second {
		t.Errorf("wave duration %v, want its own profile's 6s", w.Duration())
	}
}

// TestTenantOf: blocks of perTenant users share a tenant, the tenants in
// turn; without a pool (or for no user) there is no tenant.
func TestTenantOf(t *testing.T) {
	var got []int
	for id := int64(1); id <= 8; id++ {
		got = append(got, TenantOf(id, 3, 2))
	}
	if want := []int{1, 1, 2, 2, 3, 3, 1, 1}; !slices.Equal(got, want) {
		t.Errorf("tenants of users 1..8 = %v, want %v", got, want)
	}
	if a, b, c := TenantOf(4, 3, 0), TenantOf(4, 0, 2), TenantOf(0, 3, 2); a != 1 || b != 0 || c != 0 {
		t.Errorf("one user per block %d (want 1), no pool %d, no user %d (want 0)", a, b, c)
	}
}
