package sample

// LoopCrossOrigin is in the message of a redirect to another origin that
// the event-loop engine failed (it dials one address), so the verdict's
// indicators can name the engine that follows it.
const LoopCrossOrigin = "the event-loop engine follows redirects only to the step's own origin"
