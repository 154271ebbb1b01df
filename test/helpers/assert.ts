import type { Test } from 'tap'
import type { HttpAnswer } from './http.js'

/**
 * Assertions on HTTP answers shared by the suites.
 *
 * tap prints the message of every passing assertion, so a message never carries an
 * answer's body (it may hold access tokens, refresh tokens or API keys): the body
 * goes into the diagnostic `extra` argument, which tap prints only on failure.
 */

/** The exact Content-Type of every problem answer (RFC 9457). */
export const PROBLEM_JSON = 'application/problem+json; charset=utf-8'
/** The exact Content-Type of every JSON answer. */
export const JSON_TYPE = 'application/json; charset=utf-8'

/** The status of `answer` (its body shown only on failure). One assertion. */
export function assertStatus (t: Test, answer: HttpAnswer, status: number, label = `status ${status}`): void {
  t.equal(answer.status, status, label, { body: answer.text })
}

/** A JSON answer: its status and exactly `application/json; charset=utf-8`. Two assertions. */
export function assertJson (t: Test, answer: HttpAnswer, status: number, label = `status ${status}`): void {
  assertStatus(t, answer, status, label)
  t.equal(answer.headers['content-type'], JSON_TYPE, `${label}: JSON`)
}

/**
 * A problem answer: its status, exactly `application/problem+json; charset=utf-8`,
 * and a body with the type URN, title, status, detail and code. Three assertions.
 */
export function assertProblem (t: Test, answer: HttpAnswer, status: number, code: string, label = code): void {
  assertStatus(t, answer, status, `${label}: status ${status}`)
  t.equal(answer.headers['content-type'], PROBLEM_JSON, `${label}: problem+json`)
  t.match(answer.body, { type: `urn:portier:problem:${code}`, title: String, status, detail: String, code }, `${label}: ${code}`)
}
