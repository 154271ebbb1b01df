/**
 * A user agent as a person recognises it ("Chrome on Linux"), for the sessions page.
 * A short heuristic rather than a parser dependency: the page only needs to tell one
 * browser from another, the full string stays on the page beside it, and the few
 * families below are where nearly every browser says what it is. Order matters:
 * Edge and Opera also say Chrome, Chrome also says Safari, Android also says Linux.
 */

const BROWSERS: Array<[RegExp, string]> = [
  [/\bEdg(e|A|iOS)?\//, 'Edge'],
  [/\b(OPR|Opera)\//, 'Opera'],
  [/\b(Firefox|FxiOS)\//, 'Firefox'],
  [/\b(HeadlessChrome|Chrome|Chromium|CriOS)\//, 'Chrome'],
  [/\bVersion\/[\d.]+.*\bSafari\//, 'Safari']
]

const SYSTEMS: Array<[RegExp, string]> = [
  [/\bWindows\b/, 'Windows'],
  [/\b(iPhone|iPad|iPod)\b/, 'iOS'],
  [/\bAndroid\b/, 'Android'],
  [/\bCrOS\b/, 'ChromeOS'],
  [/\bMac OS X\b|\bMacintosh\b/, 'macOS'],
  [/\bLinux\b/, 'Linux']
]

const firstMatch = (table: Array<[RegExp, string]>, text: string): string | null => table.find(([pattern]) => pattern.test(text))?.[1] ?? null

/** "Chrome on Linux", "Firefox", "macOS"; another client by its first product name ("curl"); "Unknown" when it says nothing. */
export function browserSummary (userAgent: string): string {
  const browser = firstMatch(BROWSERS, userAgent)
  const system = firstMatch(SYSTEMS, userAgent)
  if (browser !== null && system !== null) return `${browser} on ${system}`
  return browser ?? system ?? /^\s*([A-Za-z][\w.-]*)/.exec(userAgent)?.[1] ?? 'Unknown'
}
