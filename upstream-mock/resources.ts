import { Meeting, MeetingFields, Task, TaskFields, User, UserFields } from './schemas.js'
import { seedMeeting, seedSize, seedTask, seedUser } from './seed.js'
import type { ResourceDefinition } from './resource-routes.js'
import { createResourceStore } from './store.js'

export interface Resources {
  users: ResourceDefinition<User>
  tasks: ResourceDefinition<Task>
  meetings: ResourceDefinition<Meeting>
}

/** The three resources over fresh stores seeded with `users` users (tasks 2×, meetings ½×). */
export function createResources (users: number, seed: number): Resources {
  const size = seedSize(users)
  return {
    users: {
      plural: 'users',
      singular: 'user',
      record: User,
      fields: UserFields,
      required: ['first_name', 'last_name', 'email'],
      defaults: () => ({
        job_title: null,
        is_active: true,
        home_address: null,
        phone_numbers: [],
        team_ids: [],
        preferences: { time_zone: 'UTC', ui_theme: 'system', email_notifications: { daily_digest: true, mentions: true } },
        // Written by logins, which this mock does not have: a created user has never logged in.
        last_login_at: null
      }),
      store: createResourceStore(size.users, (id) => seedUser(seed, id))
    },
    tasks: {
      plural: 'tasks',
      singular: 'task',
      record: Task,
      fields: TaskFields,
      required: ['title'],
      defaults: () => ({ status: 'todo', priority: 'normal', assignee_id: null, due_on: null, tags: [], checklist_items: [] }),
      store: createResourceStore(size.tasks, (id) => seedTask(seed, id, users))
    },
    meetings: {
      plural: 'meetings',
      singular: 'meeting',
      record: Meeting,
      fields: MeetingFields,
      required: ['title', 'starts_at', 'ends_at', 'organizer_id'],
      defaults: () => ({ attendee_ids: [], location: null, video_call: null }),
      store: createResourceStore(size.meetings, (id) => seedMeeting(seed, id, users))
    }
  }
}
