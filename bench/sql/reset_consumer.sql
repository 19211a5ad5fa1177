-- Run before every consumer run: every variant starts from empty state.
TRUNCATE proj_guarded, proj_guarded_select, proj_ext_function, proj_ext, proj_newer, plpgsql_positions, plpgsql_parked,
    floor_positions, handler_ledger, ordering.positions, ordering.parked, ordering.gap_requests,
    ordering.dead_letter_events;
