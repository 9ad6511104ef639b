-- LOGIGEN Appendix A: Corporate Business Travel Portal (tables and triggers).
-- A clean transcription: the PDF's line breaks inside string literals and the page-break
-- repetitions of END are removed; everything else is as printed.

-- L0_REFERENCE Table: flight_classes
CREATE TABLE flight_classes (
  id TEXT PRIMARY KEY,
  description TEXT NOT NULL
);

-- L0_REFERENCE Table: preferred_vendors
CREATE TABLE preferred_vendors (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  vendor_type TEXT NOT NULL CHECK(vendor_type IN ('PREFERRED', 'STANDARD'))
);

-- L0_REFERENCE Table: travel_policies
CREATE TABLE travel_policies (
  id TEXT PRIMARY KEY,
  company_id TEXT NOT NULL,
  user_level TEXT NOT NULL CHECK(user_level IN ('STAFF', 'MANAGER', 'DIRECTOR', 'VP')),
  max_flight_cost_no_approval INTEGER NOT NULL,
  allowed_hotel_vendor_type TEXT NOT NULL CHECK(allowed_hotel_vendor_type IN ('PREFERRED', 'ANY')),
  UNIQUE(company_id, user_level)
);

-- L1_ENTITY Table: companies
CREATE TABLE companies (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  active INTEGER DEFAULT 1 CHECK(active IN (0,1))
);

-- L1_ENTITY Table: users
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  company_id TEXT NOT NULL REFERENCES companies(id),
  user_level TEXT NOT NULL CHECK(user_level IN ('STAFF', 'MANAGER', 'DIRECTOR', 'VP')),
  active INTEGER DEFAULT 1 CHECK(active IN (0,1))
);

-- L2_TRANSACTION Table: approvals
CREATE TABLE approvals (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  flight_booking_id INTEGER NOT NULL REFERENCES flight_bookings(id),
  approver_id TEXT REFERENCES users(id),
  status TEXT NOT NULL CHECK(status IN ('PENDING', 'APPROVED', 'DENIED')),
  step INTEGER NOT NULL
);

-- L2_TRANSACTION Table: flight_bookings
CREATE TABLE flight_bookings (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  travel_request_id INTEGER NOT NULL REFERENCES travel_requests(id),
  flight_code TEXT NOT NULL,
  cost INTEGER NOT NULL,
  class TEXT NOT NULL REFERENCES flight_classes(id),
  departure_step INTEGER NOT NULL,
  booking_step INTEGER NOT NULL,
  status TEXT NOT NULL DEFAULT 'PENDING' CHECK(status IN ('PENDING', 'APPROVED', 'TICKETED', 'CANCELLED')),
  approval_status TEXT NOT NULL DEFAULT 'NOT_REQUIRED' CHECK(approval_status IN ('NOT_REQUIRED', 'PENDING', 'APPROVED', 'DENIED')),
  policy_violation_flag INTEGER DEFAULT 0 CHECK(policy_violation_flag IN (0,1)),
  cancellation_step INTEGER,
  refund_amount INTEGER
);

-- L2_TRANSACTION Table: hotel_bookings
CREATE TABLE hotel_bookings (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  travel_request_id INTEGER NOT NULL REFERENCES travel_requests(id),
  hotel_vendor_id TEXT NOT NULL REFERENCES preferred_vendors(id),
  cost INTEGER NOT NULL,
  booking_step INTEGER NOT NULL,
  status TEXT NOT NULL DEFAULT 'PENDING' CHECK(status IN ('PENDING', 'CONFIRMED', 'CANCELLED')),
  reimbursable INTEGER DEFAULT 1 CHECK(reimbursable IN (0,1)),
  cancellation_step INTEGER,
  refund_amount INTEGER
);

-- L2_TRANSACTION Table: travel_requests
CREATE TABLE travel_requests (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id TEXT NOT NULL REFERENCES users(id),
  trip_purpose TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'DRAFT' CHECK(status IN ('DRAFT', 'SUBMITTED', 'APPROVED', 'CANCELLED')),
  current_step INTEGER NOT NULL,
  flight_booking_count INTEGER DEFAULT 0 CHECK(flight_booking_count >= 0 AND flight_booking_count <= 3),
  hotel_booking_count INTEGER DEFAULT 0 CHECK(hotel_booking_count >= 0 AND hotel_booking_count <= 2)
);

-- Trigger: validate_travel_request_insert
CREATE TRIGGER validate_travel_request_insert
BEFORE INSERT ON travel_requests
FOR EACH ROW
BEGIN
  SELECT CASE
    WHEN NOT EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id AND active = 1)
    THEN RAISE(ABORT, '[PREREQ_FAIL] User does not exist or is inactive')
    WHEN NOT EXISTS (
      SELECT 1 FROM users u JOIN companies c ON u.company_id = c.id
      WHERE u.id = NEW.user_id AND c.active = 1
    ) THEN RAISE(ABORT, '[PREREQ_FAIL] User''s company is inactive')
    WHEN NEW.trip_purpose IS NULL OR NEW.trip_purpose = ''
    THEN RAISE(ABORT, '[POLICY_VIOLATION] Trip purpose is mandatory')
    WHEN NEW.current_step IS NULL
    THEN RAISE(ABORT, '[REQUIRED_FIELD] current_step must be provided')
    WHEN NEW.status IS NULL THEN RAISE(ABORT, '[SYSTEM_ERROR] Status must be provided')
    WHEN NEW.status != 'DRAFT' THEN RAISE(ABORT, '[SYSTEM_ERROR] New travel requests must start as DRAFT')
  END;
END;

-- Trigger: enforce_flight_booking_quota
CREATE TRIGGER enforce_flight_booking_quota
BEFORE INSERT ON flight_bookings
FOR EACH ROW
BEGIN
  SELECT CASE
    WHEN (SELECT flight_booking_count FROM travel_requests WHERE id = NEW.travel_request_id) >= 3
    THEN RAISE(ABORT, '[QUOTA_EXCEEDED] Maximum 3 flight bookings per travel request')
  END;
END;

-- Trigger: validate_flight_booking_insert
CREATE TRIGGER validate_flight_booking_insert
BEFORE INSERT ON flight_bookings
FOR EACH ROW
BEGIN
  SELECT CASE
    WHEN NOT EXISTS (
      SELECT 1 FROM travel_requests
      WHERE id = NEW.travel_request_id AND status IN ('DRAFT', 'APPROVED')
    ) THEN RAISE(ABORT, '[PREREQ_FAIL] Travel request must be DRAFT or APPROVED')
    WHEN NEW.departure_step IS NULL THEN RAISE(ABORT, '[REQUIRED_FIELD] departure_step must be provided')
    WHEN NEW.booking_step IS NULL THEN RAISE(ABORT, '[REQUIRED_FIELD] booking_step must be provided')
    WHEN NEW.policy_violation_flag != 0
    THEN RAISE(ABORT, '[SYSTEM_CONTROL] policy_violation_flag must be 0, system will calculate')
    WHEN NEW.status != 'PENDING'
    THEN RAISE(ABORT, '[SYSTEM_ERROR] New flight bookings must start as PENDING')
  END;

  SELECT CASE
    WHEN (
      SELECT u.user_level FROM travel_requests tr
      JOIN users u ON tr.user_id = u.id
      WHERE tr.id = NEW.travel_request_id
    ) NOT IN ('DIRECTOR', 'VP') AND NEW.class != 'ECONOMY'
    THEN RAISE(ABORT, '[POLICY_VIOLATION] Only DIRECTOR/VP level can book non-ECONOMY class')
  END;

  SELECT CASE
    WHEN (
      NEW.cost > (
        SELECT tp.max_flight_cost_no_approval
        FROM travel_requests tr
        JOIN users u ON tr.user_id = u.id
        JOIN travel_policies tp ON u.company_id = tp.company_id AND u.user_level = tp.user_level
        WHERE tr.id = NEW.travel_request_id
      )
      AND NOT (
        (SELECT u.user_level FROM travel_requests tr JOIN users u ON tr.user_id = u.id WHERE tr.id = NEW.travel_request_id)
        IN ('DIRECTOR', 'VP') AND NEW.cost < 500
      )
      AND NOT (NEW.departure_step - NEW.booking_step < 3)
      AND NEW.approval_status != 'PENDING'
    )
    THEN RAISE(ABORT, '[POLICY_VIOLATION] Flight requires manager approval. Set approval_status = PENDING')
    WHEN NOT (
      NEW.cost > (
        SELECT tp.max_flight_cost_no_approval
        FROM travel_requests tr
        JOIN users u ON tr.user_id = u.id
        JOIN travel_policies tp ON u.company_id = tp.company_id AND u.user_level = tp.user_level
        WHERE tr.id = NEW.travel_request_id
      )
      AND NOT (
        (SELECT u.user_level FROM travel_requests tr JOIN users u ON tr.user_id = u.id WHERE tr.id = NEW.travel_request_id)
        IN ('DIRECTOR', 'VP') AND NEW.cost < 500
      )
      AND NOT (NEW.departure_step - NEW.booking_step < 3)
    )
    AND NEW.approval_status = 'PENDING'
    THEN RAISE(ABORT, '[LOGIC_ERROR] Approval not required for this flight. Set approval_status = NOT_REQUIRED')
  END;
END;

-- Trigger: process_flight_booking_after_insert
CREATE TRIGGER process_flight_booking_after_insert
AFTER INSERT ON flight_bookings
FOR EACH ROW
BEGIN
  UPDATE flight_bookings
  SET policy_violation_flag = CASE WHEN (NEW.departure_step - NEW.booking_step < 3) THEN 1 ELSE 0 END
  WHERE id = NEW.id;

  INSERT INTO approvals (flight_booking_id, status, step)
  SELECT NEW.id, 'PENDING', NEW.booking_step
  WHERE EXISTS (
    SELECT 1
    FROM travel_requests tr
    JOIN users u ON tr.user_id = u.id
    JOIN travel_policies tp ON u.company_id = tp.company_id AND u.user_level = tp.user_level
    WHERE tr.id = NEW.travel_request_id
      AND NEW.cost > tp.max_flight_cost_no_approval
      AND NOT (u.user_level IN ('DIRECTOR', 'VP') AND NEW.cost < 500)
      AND NOT (NEW.departure_step - NEW.booking_step < 3)
  );
END;

-- Trigger: enforce_hotel_booking_quota
CREATE TRIGGER enforce_hotel_booking_quota
BEFORE INSERT ON hotel_bookings
FOR EACH ROW
BEGIN
  SELECT CASE
    WHEN (SELECT hotel_booking_count FROM travel_requests WHERE id = NEW.travel_request_id) >= 2
    THEN RAISE(ABORT, '[QUOTA_EXCEEDED] Maximum 2 hotel bookings per travel request')
  END;
END;

-- Trigger: validate_hotel_booking_insert
CREATE TRIGGER validate_hotel_booking_insert
BEFORE INSERT ON hotel_bookings
FOR EACH ROW
BEGIN
  SELECT CASE
    WHEN NOT EXISTS (
      SELECT 1 FROM travel_requests
      WHERE id = NEW.travel_request_id AND status IN ('DRAFT', 'APPROVED')
    ) THEN RAISE(ABORT, '[PREREQ_FAIL] Travel request must be DRAFT or APPROVED')
    WHEN NOT EXISTS (SELECT 1 FROM preferred_vendors WHERE id = NEW.hotel_vendor_id)
    THEN RAISE(ABORT, '[POLICY_VIOLATION] Hotel must be from preferred vendors list')
    WHEN NEW.booking_step IS NULL
    THEN RAISE(ABORT, '[REQUIRED_FIELD] booking_step must be provided')
    WHEN NEW.reimbursable != 1
    THEN RAISE(ABORT, '[SYSTEM_CONTROL] reimbursable must be 1, system will set based on vendor type')
    WHEN NEW.status != 'PENDING'
    THEN RAISE(ABORT, '[SYSTEM_ERROR] New hotel bookings must start as PENDING')
  END;

  SELECT CASE
    WHEN (
      SELECT tp.allowed_hotel_vendor_type
      FROM travel_requests tr
      JOIN users u ON tr.user_id = u.id
      JOIN travel_policies tp ON u.company_id = tp.company_id AND u.user_level = tp.user_level
      WHERE tr.id = NEW.travel_request_id
    ) != 'ANY'
    AND (
      SELECT tp.allowed_hotel_vendor_type
      FROM travel_requests tr
      JOIN users u ON tr.user_id = u.id
      JOIN travel_policies tp ON u.company_id = tp.company_id AND u.user_level = tp.user_level
      WHERE tr.id = NEW.travel_request_id
    ) != (
      SELECT pv.vendor_type FROM preferred_vendors pv WHERE pv.id = NEW.hotel_vendor_id
    )
    THEN RAISE(ABORT, '[POLICY_VIOLATION] Hotel vendor type does not match policy requirement')
  END;
END;

-- Trigger: process_hotel_booking_after_insert
CREATE TRIGGER process_hotel_booking_after_insert
AFTER INSERT ON hotel_bookings
FOR EACH ROW
BEGIN
  UPDATE hotel_bookings
  SET reimbursable = CASE
    WHEN (SELECT vendor_type FROM preferred_vendors WHERE id = NEW.hotel_vendor_id) = 'PREFERRED'
    THEN 1 ELSE 0
  END
  WHERE id = NEW.id;
END;

-- Trigger: validate_flight_cancellation
CREATE TRIGGER validate_flight_cancellation
BEFORE UPDATE OF status ON flight_bookings
FOR EACH ROW
WHEN NEW.status = 'CANCELLED' AND OLD.status != 'CANCELLED'
BEGIN
  SELECT CASE
    WHEN OLD.status = 'TICKETED'
    THEN RAISE(ABORT, '[IRREVERSIBLE] TICKETED flights cannot be cancelled')
    WHEN NEW.cancellation_step IS NULL
    THEN RAISE(ABORT, '[PROVENANCE_REQUIRED] Cancellation step must be provided')
    WHEN NEW.refund_amount IS NULL
    THEN RAISE(ABORT, '[CALCULATION_REQUIRED] Refund amount must be calculated')
    WHEN NEW.cancellation_step - OLD.booking_step <= 2 AND NEW.refund_amount != OLD.cost
    THEN RAISE(ABORT, '[CALCULATION_ERROR] Flight cancellation within 2 steps of booking gets full refund')
    WHEN NEW.cancellation_step - OLD.booking_step > 2 AND NEW.refund_amount != OLD.cost / 2
    THEN RAISE(ABORT, '[CALCULATION_ERROR] Late flight cancellation (>2 steps from booking) gets 50% refund')
  END;
END;

-- Trigger: validate_hotel_cancellation
CREATE TRIGGER validate_hotel_cancellation
BEFORE UPDATE OF status ON hotel_bookings
FOR EACH ROW
WHEN NEW.status = 'CANCELLED' AND OLD.status != 'CANCELLED'
BEGIN
  SELECT CASE
    WHEN OLD.status = 'CONFIRMED'
    THEN RAISE(ABORT, '[IRREVERSIBLE] CONFIRMED hotels cannot be cancelled')
    WHEN NEW.cancellation_step IS NULL
    THEN RAISE(ABORT, '[PROVENANCE_REQUIRED] Cancellation step must be provided')
    WHEN NEW.refund_amount IS NULL
    THEN RAISE(ABORT, '[CALCULATION_REQUIRED] Refund amount must be calculated')
    WHEN NEW.cancellation_step - OLD.booking_step <= 2 AND NEW.refund_amount != OLD.cost
    THEN RAISE(ABORT, '[CALCULATION_ERROR] Hotel cancellation within 2 steps of booking gets full refund')
    WHEN NEW.cancellation_step - OLD.booking_step > 2 AND NEW.refund_amount != OLD.cost / 2
    THEN RAISE(ABORT, '[CALCULATION_ERROR] Late hotel cancellation (>2 steps from booking) gets 50% refund')
  END;
END;

-- Trigger: recalc_flight_quota_after_status_change
CREATE TRIGGER recalc_flight_quota_after_status_change
AFTER UPDATE OF status ON flight_bookings
FOR EACH ROW
WHEN NEW.status != OLD.status
BEGIN
  UPDATE travel_requests
  SET flight_booking_count = (
    SELECT COUNT(*) FROM flight_bookings
    WHERE travel_request_id = OLD.travel_request_id AND status != 'CANCELLED'
  )
  WHERE id = OLD.travel_request_id;
END;

-- Trigger: recalc_hotel_quota_after_status_change
CREATE TRIGGER recalc_hotel_quota_after_status_change
AFTER UPDATE OF status ON hotel_bookings
FOR EACH ROW
WHEN NEW.status != OLD.status
BEGIN
  UPDATE travel_requests
  SET hotel_booking_count = (
    SELECT COUNT(*) FROM hotel_bookings
    WHERE travel_request_id = OLD.travel_request_id AND status != 'CANCELLED'
  )
  WHERE id = OLD.travel_request_id;
END;

-- Trigger: validate_approval_update
CREATE TRIGGER validate_approval_update
BEFORE UPDATE ON approvals
FOR EACH ROW
BEGIN
  SELECT CASE
    WHEN OLD.status != 'PENDING'
    THEN RAISE(ABORT, '[IRREVERSIBLE] Can only update PENDING approvals')
    WHEN OLD.flight_booking_id != NEW.flight_booking_id
    THEN RAISE(ABORT, '[IMMUTABLE] Cannot change flight_booking_id')
    WHEN OLD.step != NEW.step
    THEN RAISE(ABORT, '[IMMUTABLE] Cannot change approval step')
    WHEN NEW.approver_id IS NOT NULL AND NOT EXISTS (
      SELECT 1 FROM users WHERE id = NEW.approver_id AND active = 1
    ) THEN RAISE(ABORT, '[PREREQ_FAIL] Approver does not exist or is inactive')
    WHEN NEW.approver_id IS NOT NULL AND (
      SELECT user_level FROM users WHERE id = NEW.approver_id
    ) NOT IN ('MANAGER', 'DIRECTOR', 'VP')
    THEN RAISE(ABORT, '[AUTHORITY_ERROR] Approver must be MANAGER level or higher')
    WHEN NEW.approver_id IS NOT NULL AND EXISTS (
      SELECT 1 FROM flight_bookings fb
      JOIN travel_requests tr ON fb.travel_request_id = tr.id
      WHERE fb.id = NEW.flight_booking_id AND tr.user_id = NEW.approver_id
    ) THEN RAISE(ABORT, '[CONFLICT_OF_INTEREST] Approver cannot approve their own request')
  END;
END;

-- Trigger: process_approval_after_update
CREATE TRIGGER process_approval_after_update
AFTER UPDATE ON approvals
FOR EACH ROW
WHEN NEW.status != OLD.status
BEGIN
  UPDATE flight_bookings
  SET approval_status = NEW.status
  WHERE id = NEW.flight_booking_id;

  UPDATE flight_bookings
  SET status = 'TICKETED'
  WHERE id = NEW.flight_booking_id
    AND NEW.status = 'APPROVED'
    AND status = 'PENDING'
    AND policy_violation_flag = 0;
END;

-- Trigger: prevent_flight_modification_after_final
CREATE TRIGGER prevent_flight_modification_after_final
BEFORE UPDATE ON flight_bookings
FOR EACH ROW
WHEN OLD.status IN ('TICKETED', 'CANCELLED')
BEGIN
  SELECT CASE
    WHEN OLD.status = 'TICKETED' AND NEW.status != 'TICKETED'
    THEN RAISE(ABORT, '[IMMUTABLE] TICKETED bookings cannot be modified')
    WHEN OLD.status = 'CANCELLED' AND NEW.status != 'CANCELLED'
    THEN RAISE(ABORT, '[IMMUTABLE] CANCELLED bookings cannot be reactivated')
    WHEN OLD.cost != NEW.cost
    THEN RAISE(ABORT, '[IMMUTABLE] Cost cannot be changed after creation')
    WHEN OLD.departure_step != NEW.departure_step
    THEN RAISE(ABORT, '[IMMUTABLE] Departure step cannot be changed after creation')
    WHEN OLD.booking_step != NEW.booking_step
    THEN RAISE(ABORT, '[IMMUTABLE] Booking step cannot be changed after creation')
  END;
END;

-- Trigger: prevent_hotel_modification_after_final
CREATE TRIGGER prevent_hotel_modification_after_final
BEFORE UPDATE ON hotel_bookings
FOR EACH ROW
WHEN OLD.status IN ('CONFIRMED', 'CANCELLED')
BEGIN
  SELECT CASE
    WHEN OLD.status = 'CONFIRMED' AND NEW.status != 'CONFIRMED'
    THEN RAISE(ABORT, '[IMMUTABLE] CONFIRMED hotels cannot be modified')
    WHEN OLD.status = 'CANCELLED' AND NEW.status != 'CANCELLED'
    THEN RAISE(ABORT, '[IMMUTABLE] CANCELLED hotels cannot be reactivated')
    WHEN OLD.cost != NEW.cost
    THEN RAISE(ABORT, '[IMMUTABLE] Cost cannot be changed after creation')
    WHEN OLD.booking_step != NEW.booking_step
    THEN RAISE(ABORT, '[IMMUTABLE] Booking step cannot be changed after creation')
  END;
END;
