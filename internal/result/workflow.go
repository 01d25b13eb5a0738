package result

// Workflow is what a plan's workflow did beside the load: its setup and
// teardown, whose requests are kept apart from the load's so they do not
// move its figures, and the renewals of users' once steps.
type Workflow struct {
	// Renewals counts the times a user ran its once steps again because a
	// step answered a renew_on status (an expired token, say).
	Renewals int64  `json:"renewals"`
	Setup    *Phase `json:"setup,omitempty"`
	Teardown *Phase `json:"teardown,omitempty"`
}

// Phase is the setup or the teardown: its requests step by step.
type Phase struct {
	Requests int64  `json:"requests"`
	Failed   int64  `json:"failed"`
	Steps    []Step `json:"steps"`
	// Error says why the phase did not finish (a failed step, the
	// teardown's time limit); empty when it did.
	Error string `json:"error,omitempty"`
}
