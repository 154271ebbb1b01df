/** Vocabulary of the generated records. Changing any list changes every seeded body. */

export const FIRST_NAMES = [
  'Ada', 'Alan', 'Amara', 'Ana', 'Arjun', 'Beatriz', 'Bjorn', 'Chen', 'Chloe', 'Dario', 'Dmitri', 'Elena',
  'Emeka', 'Farah', 'Grace', 'Hannah', 'Hiro', 'Ines', 'Ingrid', 'Ivan', 'Jamal', 'Jia', 'Kofi', 'Lars',
  'Leila', 'Liam', 'Lucia', 'Mateo', 'Mei', 'Nadia', 'Noah', 'Olga', 'Omar', 'Priya', 'Rafael', 'Sakura',
  'Sofia', 'Tariq', 'Yusuf', 'Zoe'
] as const

export const LAST_NAMES = [
  'Abara', 'Andersen', 'Becker', 'Bianchi', 'Costa', 'Dubois', 'Eriksson', 'Fernandez', 'Garcia', 'Haddad',
  'Hoffmann', 'Ivanova', 'Jansen', 'Kim', 'Kowalski', 'Lefevre', 'Lindqvist', 'Lovelace', 'Mensah', 'Moreau',
  'Nakamura', 'Novak', 'Okafor', 'Oliveira', 'Papadopoulos', 'Patel', 'Quinn', 'Rossi', 'Santos', 'Schmidt',
  'Silva', 'Tanaka', 'Turing', 'Varga', 'Wang', 'Weber', 'Yilmaz', 'Zhang'
] as const

export const JOB_TITLES = [
  'Account Executive', 'Backend Engineer', 'Customer Success Manager', 'Data Analyst', 'Engineering Manager',
  'Finance Controller', 'Frontend Engineer', 'HR Business Partner', 'IT Administrator', 'Legal Counsel',
  'Marketing Specialist', 'Office Manager', 'Operations Lead', 'Payroll Specialist', 'Product Designer',
  'Product Manager', 'QA Engineer', 'Recruiter', 'Sales Director', 'Site Reliability Engineer',
  'Support Agent', 'Technical Writer'
] as const

export const STREETS = [
  'Bridge Road', 'Canal Street', 'Church Lane', 'Elm Avenue', 'Harbour Walk', 'Kingsway', 'Linden Allee',
  'Maple Street', 'Market Square', 'Mill Lane', 'Orchard Way', 'Park Avenue', 'Rue des Lilas', 'Station Road',
  'Via Roma', 'Calle Mayor', 'Hauptstrasse', 'Prinsengracht'
] as const

export const STREET_LINE_2 = ['Apartment', 'Floor', 'Suite', 'Unit'] as const

/** `#`: a digit, `A`: a capital letter. */
export interface City { name: string, countryCode: string, postalFormat: string, timeZone: string, phonePrefix: string }

export const CITIES: readonly City[] = [
  { name: 'Berlin', countryCode: 'DE', postalFormat: '10###', timeZone: 'Europe/Berlin', phonePrefix: '+49 30' },
  { name: 'Hamburg', countryCode: 'DE', postalFormat: '20###', timeZone: 'Europe/Berlin', phonePrefix: '+49 40' },
  { name: 'Paris', countryCode: 'FR', postalFormat: '750##', timeZone: 'Europe/Paris', phonePrefix: '+33 1' },
  { name: 'Lyon', countryCode: 'FR', postalFormat: '6900#', timeZone: 'Europe/Paris', phonePrefix: '+33 4' },
  { name: 'London', countryCode: 'GB', postalFormat: 'SW# #AA', timeZone: 'Europe/London', phonePrefix: '+44 20' },
  { name: 'Dublin', countryCode: 'IE', postalFormat: 'D0# A###', timeZone: 'Europe/Dublin', phonePrefix: '+353 1' },
  { name: 'Amsterdam', countryCode: 'NL', postalFormat: '10## AA', timeZone: 'Europe/Amsterdam', phonePrefix: '+31 20' },
  { name: 'Madrid', countryCode: 'ES', postalFormat: '280##', timeZone: 'Europe/Madrid', phonePrefix: '+34 91' },
  { name: 'Milan', countryCode: 'IT', postalFormat: '201##', timeZone: 'Europe/Rome', phonePrefix: '+39 02' },
  { name: 'Zurich', countryCode: 'CH', postalFormat: '80##', timeZone: 'Europe/Zurich', phonePrefix: '+41 44' },
  { name: 'New York', countryCode: 'US', postalFormat: '100##', timeZone: 'America/New_York', phonePrefix: '+1 212' },
  { name: 'Austin', countryCode: 'US', postalFormat: '787##', timeZone: 'America/Chicago', phonePrefix: '+1 512' },
  { name: 'San Francisco', countryCode: 'US', postalFormat: '941##', timeZone: 'America/Los_Angeles', phonePrefix: '+1 415' },
  { name: 'Toronto', countryCode: 'CA', postalFormat: 'M#A #A#', timeZone: 'America/Toronto', phonePrefix: '+1 416' },
  { name: 'Tokyo', countryCode: 'JP', postalFormat: '1##-####', timeZone: 'Asia/Tokyo', phonePrefix: '+81 3' },
  { name: 'Sydney', countryCode: 'AU', postalFormat: '20##', timeZone: 'Australia/Sydney', phonePrefix: '+61 2' }
]

export const TASK_VERBS = [
  'Review', 'Update', 'Draft', 'Approve', 'Reconcile', 'Migrate', 'Audit', 'Schedule', 'Prepare', 'Archive',
  'Renew', 'Document'
] as const

export const TASK_OBJECTS = [
  'Q3 budget', 'onboarding checklist', 'vendor contract', 'expense reports', 'access rights', 'office lease',
  'payroll run', 'release notes', 'customer invoices', 'security training', 'hiring plan', 'travel policy',
  'laptop inventory', 'board deck'
] as const

export const TASK_TAGS = [
  'finance', 'hr', 'legal', 'it', 'urgent', 'compliance', 'customer', 'internal', 'q3', 'q4', 'follow-up',
  'blocked-by-vendor'
] as const

export const CHECKLIST_LABELS = [
  'Collect inputs', 'Check figures', 'Ask for sign-off', 'Send to finance', 'File the PDF', 'Notify the team',
  'Update the wiki', 'Book a review slot'
] as const

export const MEETING_TITLES = [
  'Weekly sync', 'Budget review', 'Sprint planning', 'Retrospective', 'One-on-one', 'Quarterly business review',
  'Hiring debrief', 'Vendor call', 'All hands', 'Design critique', 'Incident review', 'Onboarding session'
] as const

export const ROOMS = ['Atlas', 'Borealis', 'Cedar', 'Delta', 'Everest', 'Fjord', 'Granite', 'Horizon'] as const
