package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/wfstore/wfstore/workflow"
)

// consoleAction is one action: GET /action/NAME shows what it will do and
// a form to confirm it, POST /action/NAME does it through the Store and
// redirects to the page that shows the result. An action never passes an
// execution authority: where the Store requires one, the console refuses.
type consoleAction struct {
	name    string
	confirm pageFunc
	do      func(r *http.Request) (redirect string, err error)
}

type fact struct{ Name, Value string }

type formField struct {
	Name, Label, Type, Value, Help string
	Options                        []string
}

type confirmView struct {
	Action   string
	What     string
	Facts    []fact
	Fields   []formField
	Refusal  string
	Button   string
	Evidence *attemptView
	Back     string
}

const raiseRefusal = "This run has an execution authority, and the Store raises its allowance only for a caller presenting it. " +
	"The console never uses an authority read from the store, so it refuses: raise the allowance from the process that holds the authority."

func (c *console) actions() []consoleAction {
	return []consoleAction{
		{name: "cancel", confirm: c.confirmCancel(false), do: c.doCancel(false)},
		{name: "cancel-tree", confirm: c.confirmCancel(true), do: c.doCancel(true)},
		{name: "allowance", confirm: c.confirmAllowance, do: c.doAllowance},
		{name: "retry", confirm: c.confirmRetry, do: c.doRetry},
		{name: "repair", confirm: c.confirmRepair, do: c.doRepair},
	}
}

func runLink(id, done string) string {
	u := "/run?id=" + url.QueryEscape(id)
	if done != "" {
		u += "&done=" + done
	}
	return u
}

func runFacts(run workflow.Run) []fact {
	f := []fact{{"run", run.ID}, {"status", string(run.Status)}, {"root", run.RootID}}
	if !run.CancelRequestedAt.IsZero() {
		f = append(f, fact{"cancellation requested", msTime(run.CancelRequestedAt.UnixMilli())})
	}
	if run.Authority != nil {
		f = append(f, fact{"execution authority", "held by daemon " + run.Authority.DaemonInstanceID + ", generation " + strconv.FormatInt(run.Authority.Generation, 10)})
	}
	return f
}

func (c *console) confirmCancel(tree bool) pageFunc {
	return func(r *http.Request) (string, any, error) {
		id := r.URL.Query().Get("run")
		run, err := c.store.GetRun(r.Context(), id)
		if err != nil {
			return "", nil, err
		}
		v := confirmView{Action: "cancel", Facts: runFacts(run), Button: "Cancel run", Back: runLink(id, ""),
			Fields: []formField{{Name: "run", Type: "hidden", Value: id}},
			What: "Records the run's cancellation intent (it is never cleared): nothing more of it is admitted or handed off, " +
				"its unstarted activations are cancelled, and it becomes cancelled once no attempt is active and its child runs are terminal. " +
				"Its child runs are not cancelled (their parent attempts' owners decide)."}
		if tree {
			v.Action, v.Button = "cancel-tree", "Cancel the whole tree"
			v.What = "Cancels this composition root and every run linked to it, at any depth, in one transaction: each gets the cancellation intent, " +
				"unstarted activations are cancelled, and quiescent runs are finalised. A failed descendant is cancelled too, so no retry can restart work in the tree."
		}
		if run.Authority != nil {
			v.What += " The run has an execution authority; cancellation does not require it, so the console asks for none."
		}
		return strings.TrimSuffix(v.Button, " run") + " " + id + "?", v, nil
	}
}

func (c *console) doCancel(tree bool) func(*http.Request) (string, error) {
	return func(r *http.Request) (string, error) {
		id := r.PostFormValue("run")
		now := c.cfg.Now()
		if tree {
			_, err := c.store.RequestTreeCancellation(r.Context(), id, nil, now)
			return runLink(id, "tree"), err
		}
		_, err := c.store.RequestCancellation(r.Context(), id, nil, now)
		return runLink(id, "cancel"), err
	}
}

func (c *console) confirmAllowance(r *http.Request) (string, any, error) {
	id := r.URL.Query().Get("run")
	run, err := c.store.GetRun(r.Context(), id)
	if err != nil {
		return "", nil, err
	}
	capText := strconv.FormatInt(run.Limits.NodeExecutionCap, 10)
	v := confirmView{Action: "allowance", Facts: append(runFacts(run), fact{"node execution cap", capText}),
		Button: "Raise the allowance", Back: runLink(id, ""),
		What: "Raises the run's node execution cap from its current value to the one you enter, by compare-and-set: if the cap changed since this page was read, nothing changes. " +
			"Pending activations the exhausted allowance held back become admissible again.",
		Fields: []formField{
			{Name: "run", Type: "hidden", Value: id},
			{Name: "expected", Type: "hidden", Value: capText},
			{Name: "target", Label: "New node execution cap", Type: "number", Value: strconv.FormatInt(run.Limits.NodeExecutionCap*2, 10), Help: "must exceed " + capText},
		}}
	if run.Authority != nil {
		v.Refusal = raiseRefusal
	}
	return "Raise the allowance of " + id + "?", v, nil
}

func (c *console) doAllowance(r *http.Request) (string, error) {
	id := r.PostFormValue("run")
	expected, err1 := strconv.ParseInt(r.PostFormValue("expected"), 10, 64)
	target, err2 := strconv.ParseInt(r.PostFormValue("target"), 10, 64)
	if err1 != nil || err2 != nil {
		return "", consoleErr(http.StatusBadRequest, "the expected and new caps must be whole numbers")
	}
	run, err := c.store.GetRun(r.Context(), id)
	if err != nil {
		return "", err
	}
	if run.Authority != nil {
		return "", consoleErr(http.StatusConflict, raiseRefusal)
	}
	err = c.store.IncreaseAllowance(r.Context(), workflow.AllowanceIncrease{RunID: id, ExpectedCap: expected, TargetCap: target}, c.cfg.Now())
	return runLink(id, "allowance"), err
}

// retryTarget reads the activation key and failed attempt of a retry form
// or link.
func retryTarget(get func(string) string) (workflow.ActivationKey, uint32, error) {
	k := workflow.ActivationKey{RunID: get("run"), NodeID: get("node"), ActivationID: get("activation")}
	n, err := strconv.ParseUint(get("attempt"), 10, 32)
	if err != nil || n == 0 {
		return k, 0, consoleErr(http.StatusBadRequest, "attempt must be the failed attempt's number (1 or more)")
	}
	return k, uint32(n), nil
}

func (c *console) confirmRetry(r *http.Request) (string, any, error) {
	k, n, err := retryTarget(r.URL.Query().Get)
	if err != nil {
		return "", nil, err
	}
	act, err := c.store.GetActivation(r.Context(), k)
	if err != nil {
		return "", nil, err
	}
	run, err := c.store.GetRun(r.Context(), k.RunID)
	if err != nil {
		return "", nil, err
	}
	v := confirmView{Action: "retry", Back: runLink(k.RunID, ""), Button: "Retry the node",
		Facts: append(runFacts(run), fact{"node", k.NodeID}, fact{"activation", k.ActivationID},
			fact{"activation status", string(act.Status)}, fact{"failed attempt", strconv.FormatUint(uint64(n), 10)},
			fact{"next attempt", strconv.FormatUint(uint64(n)+1, 10)}),
		What: "Explicitly requeues this failed, output-free activation: its next attempt gets a new dispatch identity and is admitted by the next Dispatch. " +
			"The Store refuses when the run is neither failed nor running, has cancellation requested, the retry cap is reached, or another activation already follows this one.",
		Fields: []formField{{Name: "run", Type: "hidden", Value: k.RunID}, {Name: "node", Type: "hidden", Value: k.NodeID},
			{Name: "activation", Type: "hidden", Value: k.ActivationID}, {Name: "attempt", Type: "hidden", Value: strconv.FormatUint(uint64(n), 10)}}}
	return "Retry node " + k.NodeID + "?", v, nil
}

func (c *console) doRetry(r *http.Request) (string, error) {
	k, n, err := retryTarget(r.PostFormValue)
	if err != nil {
		return "", err
	}
	_, err = c.store.RetryFailedNode(r.Context(), k, n, c.cfg.Now())
	return runLink(k.RunID, "retry"), err
}

var repairActions = []string{string(workflow.RepairConfirmFailed), string(workflow.RepairConfirmSucceeded),
	string(workflow.RepairConfirmCancelled), string(workflow.RepairAbandon)}

func (c *console) confirmRepair(r *http.Request) (string, any, error) {
	id := r.URL.Query().Get("id")
	ev, err := c.attemptEvidence(r, id)
	if err != nil {
		return "", nil, err
	}
	v := confirmView{Action: "repair", Evidence: &ev, Back: "/attempt?id=" + url.QueryEscape(id), Button: "Repair the attempt",
		What: "Resolves this repair_required attempt with what you established outside the store: the work happened (confirm succeeded, with the activation's output), " +
			"failed, was cancelled, or is abandoned so the node can be retried with a higher attempt number. It dispatches nothing. " +
			"Read the evidence below (handoff, receipt, the owner's last report); the console cannot ask the owner itself, so look the identity up in the owner's system before you confirm.",
		Fields: []formField{
			{Name: "id", Type: "hidden", Value: id},
			{Name: "action", Label: "Resolution", Type: "select", Options: repairActions},
			{Name: "output", Label: "Output JSON (confirm_succeeded only)", Type: "textarea"},
			{Name: "confirm_identity", Label: "Type the attempt's dispatch identity to confirm", Type: "text", Help: id},
		}}
	if !ev.Repairable {
		v.Refusal = "This attempt is " + string(ev.Att.Status) + " (" + string(ev.Att.SideEffect) + "): only a mutating repair_required attempt can be repaired."
	}
	return "Repair attempt " + shortID(id) + "?", v, nil
}

func (c *console) doRepair(r *http.Request) (string, error) {
	id := r.PostFormValue("id")
	if r.PostFormValue("confirm_identity") != id {
		return "", consoleErr(http.StatusBadRequest, "the typed identity does not match the attempt's dispatch identity; nothing was changed")
	}
	req := workflow.RepairRequest{Identity: id, Action: workflow.RepairAction(r.PostFormValue("action"))}
	if out := strings.TrimSpace(r.PostFormValue("output")); out != "" {
		req.Output = json.RawMessage(out)
	}
	att, err := c.store.GetAttempt(r.Context(), id)
	if err != nil {
		return "", err
	}
	if err := c.store.Repair(r.Context(), req, c.cfg.Now()); err != nil {
		return "", err
	}
	return runLink(att.Key.RunID, "repair"), nil
}

// act runs a POSTed action and redirects to the page showing its result,
// or shows the error page (the Store's typed errors leave the store as it
// was).
func (c *console) act(a consoleAction) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		to, err := a.do(r)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
	}
}
