-- Gate 3 in the database. An invocation becomes AUTHORIZED only by an
-- UPDATE from PROPOSED or WAITING_FOR_APPROVAL that records the lease that
-- authorized it: never by an INSERT, never out of a final state, never
-- without the lease. Gatehouse has one statement that does this
-- (service.invocationAuthorize, run only by Service.authorize); this
-- trigger refuses any other shape of write, whatever code issues it.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION tool_invocations_authorize_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'AUTHORIZED' AND (
           TG_OP = 'INSERT'
        OR OLD.status NOT IN ('PROPOSED', 'WAITING_FOR_APPROVAL', 'AUTHORIZED')
        OR NEW.authorized_worker_id IS NULL
        OR NEW.authorized_fencing_token IS NULL) THEN
        RAISE EXCEPTION 'invocation %: only the single gate authorizes an invocation', NEW.id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER tool_invocations_authorize_guard
    BEFORE INSERT OR UPDATE OF status ON tool_invocations
    FOR EACH ROW EXECUTE FUNCTION tool_invocations_authorize_guard();

-- +goose Down
DROP TRIGGER tool_invocations_authorize_guard ON tool_invocations;
DROP FUNCTION tool_invocations_authorize_guard();
