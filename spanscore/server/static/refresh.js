/* Optional auto-refresh for a dashboard page: off unless chosen, the interval kept in the address (?refresh=30s).
 *
 * A page holds a <select id="refresh"> whose options are the intervals offered ("" is off). `read(params)`
 * takes the address's value (answering a note when the page cannot use it); `every(reload)` reloads the page's
 * data that often, one load at a time (the next is timed from the end of the last), and not while the tab is
 * hidden. The page writes the value back into its address with its other filters.
 */
"use strict";

const SpanscoreRefresh = (() => {
  const select = () => document.getElementById("refresh");
  const SECONDS = { s: 1, m: 60 };

  function seconds(value) {
    const match = /^(\d+)([sm])$/.exec(value || "");
    return match ? Number(match[1]) * SECONDS[match[2]] : 0;
  }

  /* The address's refresh value into the select; a value it does not offer is named, and refresh stays off. */
  function read(params) {
    const value = params.get("refresh") || "";
    if ([...select().options].some((o) => o.value === value)) {
      select().value = value;
      return "";
    }
    select().value = "";
    return `refresh=${value} is not one of the intervals offered (refresh is off)`;
  }

  let timer = null;
  let reload = null;

  function schedule() {
    clearTimeout(timer);
    const wait = seconds(select().value);
    if (!wait || !reload) return;
    timer = setTimeout(async () => {
      if (!document.hidden) await reload();
      schedule();
    }, wait * 1000);
  }

  /* Reload with `load` at the chosen interval; a change of the select (or of the address) re-times it. */
  function every(load) {
    reload = load;
    select().addEventListener("change", schedule);
    schedule();
    return schedule;
  }

  return { read, every, schedule };
})();
