"""The web dashboard in a real headless browser (Debian's chromium driven by chromedriver
through selenium), on a real API server reading a real Prometheus with ten minutes of
telemetry (fabric_history.py). Every page must load without console errors and its plots
must draw the data; screenshots go to ``.run/artefacts/dashboard/`` (gitignored) or
``$SLUICE_TEST_ARTEFACTS``."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from api.main import create_app
from controller.services.tokens import AccessRole
from controller.settings import PrometheusSettings, Settings
from lab.localpg import free_port
from lab.prometheus import LocalPrometheus
from tests.integration.conftest import issue_token, put_intent
from tests.integration.served import served
from tests.integration.telemetry.fabric_history import telemetry_intent

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
ARTEFACTS = Path(os.environ.get("SLUICE_TEST_ARTEFACTS", ROOT / ".run" / "artefacts")) / "dashboard"
WAIT_S = 30


@pytest.fixture(scope="module")
def dashboard_api(module_db_url: str, history_prometheus: LocalPrometheus) -> Iterator[str]:
    """The API on 127.0.0.1 with the telemetry intent (and a host), one rollout and one host
    apply waiting for a worker, both gated."""
    app = create_app(
        Settings.for_database(
            module_db_url, prometheus=PrometheusSettings(url=history_prometheus.url)
        ),
    )
    admin = {"Authorization": f"Bearer {issue_token(module_db_url, AccessRole.ADMIN)}"}
    with served(app) as url, httpx.Client(base_url=url) as http:
        intent = telemetry_intent()
        intent["hosts"] = [{"name": "h1", "address": "10.0.1.11", "nic_gbps": 25}]
        assert put_intent(http, admin, intent, 0).status_code == 201  # type: ignore[arg-type]
        gates = {"gates": [{"builtin": "drops", "threshold": 1000}], "soak_s": 30}
        body = {"canary": ["leaf1"], "gates": gates, "allow_port_flaps": True}  # a first rollout
        started = http.post("/api/v1/rollouts", json=body, headers=admin)
        assert started.status_code == 201, started.text
        applying = http.post("/api/v1/hosts/apply", json={"gates": gates}, headers=admin)
        assert applying.status_code == 202, applying.text
        yield url


@pytest.fixture(scope="module")
def viewer_token(module_db_url: str) -> str:
    return issue_token(module_db_url, AccessRole.VIEWER, name="dashboard-viewer")


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert binary, "chromium missing: run scripts/bootstrap.sh"
    assert driver, "chromium-driver missing: run scripts/bootstrap.sh"
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in (
        "--headless=new",
        "--no-sandbox",  # we run as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1440,1100",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    chrome = webdriver.Chrome(options=options, service=Service(executable_path=driver))
    try:
        yield chrome
    finally:
        chrome.quit()


def console_errors(browser: WebDriver) -> list[str]:
    """The browser console's errors since the last call (reading the log empties it)."""
    return [str(e["message"]) for e in browser.get_log("browser") if e["level"] == "SEVERE"]  # type: ignore[attr-defined]


def rendered(browser: WebDriver) -> None:
    """Until the page says it rendered from the API (body[data-rendered] is set)."""
    WebDriverWait(browser, WAIT_S).until(
        lambda b: b.find_element(By.TAG_NAME, "body").get_attribute("data-rendered")
    )


def screenshot(browser: WebDriver, name: str) -> Path:
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTEFACTS / f"{name}.png"
    # The whole page: set the window to the document's height first.
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1440, max(1100, int(height)))
    assert browser.save_screenshot(str(path))
    return path


def test_overview_shows_health_rollouts_and_switches(
    browser: WebDriver, dashboard_api: str, viewer_token: str
) -> None:
    browser.get(f"{dashboard_api}/dashboard#token={viewer_token}")
    rendered(browser)
    assert viewer_token not in browser.current_url  # the fragment is dropped once read
    assert browser.find_element(By.ID, "fabric-state").text == "fabric warn"
    rows = browser.find_elements(By.CSS_SELECTOR, "#switches tbody tr")
    assert [r.find_element(By.TAG_NAME, "a").text for r in rows] == ["leaf1", "leaf2"]
    badges = [r.find_element(By.CSS_SELECTOR, ".badge").text for r in rows]
    assert badges == ["ok", "warn"]
    assert "dropped packets/s 5 >= 1" in rows[1].text
    active = browser.find_elements(By.CSS_SELECTOR, "#rollouts-active tbody tr")
    assert len(active) == 1
    assert "pending" in active[0].text
    assert "pending" in browser.find_element(By.ID, "rollout-last").text
    gates = browser.find_elements(By.CSS_SELECTOR, "#rollout-gates tbody tr")
    # The pre-check over both leaves: leaf2 drops 5 packets/s (fabric_history.py).
    assert [g.text.split() for g in gates] == [["pre", "precheck", "drops", "5", "1000", "pass"]]
    recent = browser.find_elements(By.CSS_SELECTOR, "#rollouts-recent tbody tr")
    assert len(recent) == 1
    assert "pending" in recent[0].text
    assert recent[0].find_element(By.CSS_SELECTOR, ".badge").text == "pass (1 readings)"
    # The host apply's pre-check, read over the same switches, shown beside it.
    host_runs = browser.find_elements(By.CSS_SELECTOR, "#host-runs-recent tbody tr")
    assert len(host_runs) == 1
    assert "pending" in host_runs[0].text
    assert host_runs[0].find_element(By.CSS_SELECTOR, ".badge").text == "pass (1 readings)"
    screenshot(browser, "overview")
    assert console_errors(browser) == []


def test_switch_page_plots_every_queue_of_every_port(
    browser: WebDriver, dashboard_api: str, viewer_token: str
) -> None:
    browser.get(f"{dashboard_api}/dashboard#token={viewer_token}")
    rendered(browser)
    browser.find_element(By.LINK_TEXT, "leaf1").click()
    WebDriverWait(browser, WAIT_S).until(lambda b: b.find_elements(By.CSS_SELECTOR, ".port svg"))
    rendered(browser)
    assert browser.find_element(By.ID, "switch-title").text == "leaf1"
    assert "agent dynamic (mqecn)" in browser.find_element(By.ID, "switch-agent").text
    panels = browser.find_elements(By.CSS_SELECTOR, ".port")
    assert [p.get_attribute("data-port") for p in panels] == ["Ethernet0", "Ethernet4"]
    for panel in panels:
        charts = panel.find_elements(By.CSS_SELECTOR, ".chart")
        assert len(charts) == 3
        thresholds, throughput, marks = (
            c.find_elements(By.CSS_SELECTOR, "path.series") for c in charts
        )
        # Thresholds of bulk and storage (ctrl has none) and occupancy of all three queues.
        assert len(thresholds) == 5
        assert len(throughput) == 3
        assert len(marks) == 3
        for path in (*thresholds, *throughput):
            # One point per evaluation step over 15 minutes of history: a drawn line, not a dot.
            assert (path.get_attribute("d") or "").count("L") >= 100
        # Each port's PFC priority 3 (the storage class's): its pauses and its group.
        pfc = panel.find_element(By.CSS_SELECTOR, "table.pfc")
        cells = [td.text for td in pfc.find_elements(By.CSS_SELECTOR, "tr td")]
        assert cells == ["3", "storage", "12", "3", "0", "4.1 kB"]
    screenshot(browser, "switch-leaf1")
    assert console_errors(browser) == []


def test_the_page_asks_for_a_token_and_uses_the_one_given(
    browser: WebDriver, dashboard_api: str, viewer_token: str
) -> None:
    browser.get(f"{dashboard_api}/dashboard")
    browser.execute_script("sessionStorage.clear()")
    browser.get(f"{dashboard_api}/dashboard")
    form = browser.find_element(By.ID, "login")
    assert form.is_displayed()
    browser.find_element(By.ID, "token").send_keys(viewer_token)
    browser.find_element(By.CSS_SELECTOR, "#login-form button").click()
    rendered(browser)
    assert browser.find_element(By.ID, "overview").is_displayed()
    assert not form.is_displayed()
    screenshot(browser, "after-login")
    assert console_errors(browser) == []


def test_prometheus_down_shows_a_banner_and_keeps_the_overview(
    browser: WebDriver, module_db_url: str, dashboard_api: str, viewer_token: str
) -> None:
    # Same database (intent, rollout), but a Prometheus address where nothing listens.
    app = create_app(
        Settings.for_database(
            module_db_url, prometheus=PrometheusSettings(url=f"http://127.0.0.1:{free_port()}")
        ),
    )
    with served(app) as url:
        browser.get(f"{url}/dashboard#token={viewer_token}")
        rendered(browser)
        banner = browser.find_element(By.ID, "problem")
        assert banner.is_displayed()
        assert banner.text.startswith("Telemetry unavailable: no answer from Prometheus")
        rows = browser.find_elements(By.CSS_SELECTOR, "#switches tbody tr")
        assert [r.find_element(By.CSS_SELECTOR, ".badge").text for r in rows] == ["unknown"] * 2
        assert browser.find_element(By.ID, "fabric-state").text == "fabric ?"
        screenshot(browser, "prometheus-down")
        # The browser logs each failed fetch; nothing else may go wrong.
        errors = console_errors(browser)
        assert errors
        assert all("/api/v1/health" in e and "503" in e for e in errors), errors
